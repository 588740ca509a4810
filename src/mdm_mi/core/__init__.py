"""The core: the backbone protocol (:mod:`~mdm_mi.core.backbone`), the decoding loop and samplers
(:mod:`~mdm_mi.core.samplers`), the two tables everything else looks up (samplers:
:mod:`~mdm_mi.core.sampler_table`; domains: :mod:`~mdm_mi.core.domain`, :mod:`~mdm_mi.core.map_domain`)
finding a run's models (:mod:`~mdm_mi.core.locate`) and the one model loader
(:mod:`~mdm_mi.core.loading`)."""

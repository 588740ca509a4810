"""The core: the backbone protocol (:mod:`~mdm_mi.core.backbone`), the decoding loop and samplers
(:mod:`~mdm_mi.core.samplers`), the sampler settings table (:mod:`~mdm_mi.core.sampler_table`), the
``mi-map`` domain interface (:mod:`~mdm_mi.core.map_domain`) and a model's calibrated fallbacks
(:mod:`~mdm_mi.core.fallbacks`). It imports only :mod:`mdm_mi.infra`; what needs every domain (the
domain table, the model loader, finding a run's models, the sampler classes) sits above the domains, at
the package's top level (:mod:`mdm_mi.models.domains`, :mod:`mdm_mi.models.loading`, :mod:`mdm_mi.models.locate`,
:mod:`mdm_mi.sampling.registry`)."""

"""Bring your own masked model: a Hugging Face masked LM as a :class:`~mdm_mi.core.backbone.Backbone`
(:mod:`mdm_mi.hf.model`), its ``mi-map`` input (:mod:`mdm_mi.hf.map`) and its verbs
(:mod:`mdm_mi.hf.jobs`: ``import-hf``, ``hf-data``). See docs/your_model.md."""

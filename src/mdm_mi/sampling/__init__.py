"""The sampler list (``registry.SAMPLER_LIST``: each class with its ``spec``) and the generator of the
tables derived from it (``python -m mdm_mi.sampling.codegen``)."""

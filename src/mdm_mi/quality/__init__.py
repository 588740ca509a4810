"""The PRISM-style quality head: a small network on the frozen backbone's output that says, per
position, how likely its token is right; the samplers that read it live in :mod:`mdm_mi.core.prism`.

- :mod:`mdm_mi.quality.head`: the network, its per-position features, save and load.
- :mod:`mdm_mi.quality.states`: the training states, reached by decoding the training items.
- :mod:`mdm_mi.quality.train`: binary cross-entropy training and its held-out scores.
"""

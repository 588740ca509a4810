"""An exact testbed for the samplers: a Potts chain whose masked conditionals, pairwise MI and joint are
computed exactly, used as the masked diffusion model (``docs/testbed.md``).

- :mod:`mdm_mi.testbed.chain`: the chain (forward-backward with evidence, conditional marginals,
  pairwise MI, exact sampling, log p(x)) and its :class:`~mdm_mi.testbed.chain.ChainBackbone`.
- :mod:`mdm_mi.testbed.exact_kl`: log q(x) of a sampler by replaying its path, the KL estimates.
- :mod:`mdm_mi.testbed.regimes`: the named regimes.
- :mod:`mdm_mi.testbed.study`: the sweep (calibrated budgets, every rule) → the tables.
- :mod:`mdm_mi.testbed.report`: the tables as markdown, the figures.
"""

"""One protein family (Pfam PF00014, Kunitz) as the protein domain's default path.

Library: :mod:`.alignment` (A2M records, identity-cluster splits, column baselines),
:mod:`.metrics` (profile HMM, co-variation statistics, cluster JSD), :mod:`.ardca` (the
family's autoregressive Potts generator, a reference row), :mod:`.pair_score`, :mod:`.loss` (held-out
masked loss), :mod:`.scores` (a set's family scores and the family table), :mod:`.jackknife`
(grouped-jackknife replicates of a set's co-variation r's), :mod:`.covariation` (calibrated
co-variation comparison), :mod:`.columns` and :mod:`.column_train` (the column model),
:mod:`.contacts`, :mod:`.figures`. Verbs: :mod:`.jobs` (``prepare-family``,
``family-ardca``, ``family-score``, ``family-loss``, ``family-table``, ``family-compare``),
:mod:`.column_jobs` (``column-pretrain``, ``figure-column-contacts``), :mod:`.figure_jobs`
(``figure-family-*``), :mod:`.oracle_jobs` (``protein-oracle-ceiling``).
"""

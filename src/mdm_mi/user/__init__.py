"""The verbs people run by hand on the trained models: ``solve``, ``mi-map`` and ``check-config``
(``sudoku-evaluate`` is shared with the workflow, in :mod:`mdm_mi.sudoku.jobs`; all are listed in
:data:`mdm_mi.cli.VERBS`).

    mdm-mi solve 53..7....6..195....98....6.8...6...34..8.3..17...2...6.6....28....419..5....8..79
"""

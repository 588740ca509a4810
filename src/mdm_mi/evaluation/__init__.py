"""Comparisons and statistics: calibration to common pass budgets (:mod:`~mdm_mi.evaluation.calibrate`,
:mod:`~mdm_mi.evaluation.budgets`), paired and matched tests (:mod:`~mdm_mi.evaluation.paired`,
:mod:`~mdm_mi.evaluation.matched`, :mod:`~mdm_mi.evaluation.stats`, :mod:`~mdm_mi.evaluation.verdicts`),
and the tables and figures built on them (:mod:`~mdm_mi.evaluation.tables`,
:mod:`~mdm_mi.evaluation.plotting`, :mod:`~mdm_mi.evaluation.paper`)."""

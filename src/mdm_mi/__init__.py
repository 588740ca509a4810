"""mdm-mi: neural estimation of pairwise mutual information in masked discrete sequence models.

Reference implementation of arXiv 2605.20187. Entry point: ``python -m mdm_mi <verb> --help``.
"""

__version__ = "0.1.0"

# mdm-mi: the workflow's table of contents. Rules live in workflow/rules/; every rule runs one
# `python -m mdm_mi <verb>` command and logs to logs/. See README.md.
import sys

from snakemake.utils import min_version

sys.path.insert(0, f"{workflow.basedir}/src")  # the package's own config check, also without an install
from mdm_mi.config import validate_config  # noqa: E402

min_version("9.0")


configfile: "config/config.yaml"


validate_config(config)  # schema defaults and types, then the cross-field checks (t_min ≤ t_max, ...)


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/tracking.smk"
include: "workflow/rules/sudoku.smk"
include: "workflow/rules/pretrained.smk"
include: "workflow/rules/mi.smk"
include: "workflow/rules/budgets.smk"
include: "workflow/rules/protein.smk"
include: "workflow/rules/family.smk"
include: "workflow/rules/protein_figures.smk"
include: "workflow/rules/figures.smk"


rule all:
    input:
        rules.sudoku_table.output,
        rules.sudoku_budgets.output,
        rules.protein_table.output,
        rules.protein_compare.output,
        FAMILY_TARGETS,
        FIGURES,
    default_target: True

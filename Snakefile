# mdm-mi: the workflow's table of contents. Rules live in workflow/rules/; every rule runs one
# `python -m mdm_mi <verb>` command and logs to logs/. See README.md.
import sys

from snakemake.utils import min_version

sys.path.insert(0, f"{workflow.basedir}/src")  # the package's own config check, also without an install
from mdm_mi.infra.config import validate_config  # noqa: E402

min_version("9.0")


configfile: "config/config.yaml"


validate_config(config)  # schema defaults and types, then the cross-field checks (t_min ≤ t_max, ...)


report: "workflow/report/workflow.rst"


# shared by both domains
include: "workflow/rules/common.smk"
include: "workflow/rules/tracking.smk"
include: "workflow/rules/pretrained.smk"
include: "workflow/rules/mi.smk"
# Sudoku
include: "workflow/rules/sudoku.smk"
include: "workflow/rules/sudoku_budgets.smk"
include: "workflow/rules/sudoku_figures.smk"
# proteins
include: "workflow/rules/protein.smk"
include: "workflow/rules/protein_family.smk"
include: "workflow/rules/protein_budgets.smk"
include: "workflow/rules/protein_figures.smk"
# your own Hugging Face model (config hf; off while hf.model is null)
include: "workflow/rules/hf.smk"
# AntiBERTy on natural antibody heavy chains (config antibody; `snakemake antibody`, config/antibody.yaml)
include: "workflow/rules/antibody.smk"


FIGURE_SETS = {"sudoku": SUDOKU_FIGURES, "protein": PROTEIN_FIGURES, "antibody": ANTIBODY_FIGURES}
FIGURES = [f for name in config["figures"] for f in FIGURE_SETS[name]]  # config key figures: whose figures


rule all:
    input:
        rules.sudoku_table.output,
        rules.sudoku_budgets.output,
        rules.figure_budgets_summary.output,
        rules.protein_table.output,
        rules.protein_compare.output,
        FAMILY_TARGETS,
        FIGURES,
        HF_TARGETS,
    default_target: True


rule figures:
    """Every figure and table: `snakemake figures`."""
    input:
        FIGURES,


rule sudoku:
    """One domain only: `snakemake sudoku` (the Sudoku table and figures) or `snakemake protein`."""
    input:
        rules.sudoku_table.output,
        SUDOKU_FIGURES,


rule hf:
    """Your own Hugging Face model only: `snakemake hf --configfile config/hf.yaml` (docs/your_model.md)."""
    input:
        HF_TARGETS,


rule antibody:
    """AntiBERTy on natural VH only: `snakemake antibody --configfile config/antibody.yaml` (docs/record/antibody.md)."""
    input:
        ANTIBODY_TARGETS,


rule protein:
    input:
        rules.protein_table.output,
        FAMILY_TARGETS,
        PROTEIN_FIGURES,

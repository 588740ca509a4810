"""Command line: ``mdm-mi <verb> --flag value ...`` (or ``python -m mdm_mi``).

:data:`VERBS` is the one table of verbs: name → argument dataclass, function, help. The parser is
derived from the dataclass fields (``foo_bar`` → ``--foo-bar``; a field without default is required;
a field marked ``flags.h(..., positional=True)`` is an optional positional argument), so the CLI only
parses and calls; no logic lives here. Imports run one way: cli → job modules → library. Workflow
verbs also take the tracking flags (``--tracking-uri``, ``--experiment``, ``--rule``,
``--wildcard k=v``, ``--config-hash``); user verbs (``user=True``) do not track. A verb returns its
exit code (None = 0); bad input is one ``error: ...`` line on stderr and exit code 2.

    mdm-mi solve --help
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import sys
import typing
from pathlib import Path
from typing import Callable, NamedTuple

from mdm_mi.antibody import jobs as antibody_jobs, oracle_jobs as antibody_oracle_jobs
from mdm_mi.hf import jobs as hf_jobs
from mdm_mi.infra.errors import USER_ERRORS
from mdm_mi.infra.memory import keep_freed_memory
from mdm_mi.infra.flags import TrackingFlags
from mdm_mi.infra.validate import flag_name, validate
from mdm_mi.jobs import budgets_summary as budgets_summary_job, docs as docs_jobs
from mdm_mi.jobs import pretrained as pretrained_jobs, tracking as tracking_job
from mdm_mi.mi import jobs as mi_jobs
from mdm_mi.protein import compare_jobs as protein_compare_jobs, generate_jobs, jobs as protein_jobs
from mdm_mi.protein import report_jobs as protein_report_jobs
from mdm_mi.protein.family import column_jobs, figure_jobs as family_figure_jobs, jobs as family_jobs
from mdm_mi.protein.family import oracle_jobs as family_oracle_jobs
from mdm_mi.sudoku import compare_jobs as sudoku_compare_jobs, jobs as sudoku_jobs, oracle_jobs as sudoku_oracle_jobs
from mdm_mi.sudoku import report_jobs as sudoku_report_jobs
from mdm_mi.testbed import jobs as testbed_jobs, place_jobs
from mdm_mi.infra.tracking import NullTracker, TrackingArgs, open_tracker
from mdm_mi.user import check_config, infill, mi_map, solve


class Verb(NamedTuple):
    """One CLI verb: its argument dataclass, ``run(args, tracker) -> exit code | None`` and one-line
    help; ``user`` verbs are run by hand (no tracking flags); ``examples`` end its ``--help``."""

    args: type
    run: Callable
    help: str
    user: bool = False
    examples: str = ""


# THE verb table, by stage. Each workflow rule is named after the verb it runs (workflow/rules/).
VERBS: dict[str, Verb] = {
    # data
    "prepare-sudoku": Verb(sudoku_jobs.PrepareArgs, sudoku_jobs.prepare_sudoku,
                           "generate training grids and build the Sudoku evaluation sets"),
    "protein-data": Verb(protein_jobs.PrepareProteinArgs, protein_jobs.prepare_protein,
                            "split the protein data, draw the references and MI contexts"),
    "prepare-family": Verb(family_jobs.PrepareFamilyArgs, family_jobs.prepare_family,
                           "split a protein family (Pfam A2M) by identity clusters; its references and MI contexts"),
    "family-ardca": Verb(family_jobs.FamilyArdcaArgs, family_jobs.family_ardca,
                         "fit ArDCA (autoregressive Potts) to a family's train split and sample its reference row"),
    "download-esmc": Verb(protein_jobs.DownloadEsmcArgs, protein_jobs.download_esmc,
                          "fetch the ESM-C 300M weights from the Hugging Face Hub"),
    "import-esmc": Verb(protein_jobs.ImportEsmcArgs, protein_jobs.import_esmc,
                        "make ESM-C 300M the protein model of a run (checked, not copied)"),
    "import-hf": Verb(hf_jobs.ImportHfArgs, hf_jobs.import_hf,
                      "mark a Hugging Face masked LM folder (save_pretrained) as a model: meta.json, checked"),
    "hf-data": Verb(hf_jobs.HfDataArgs, hf_jobs.hf_data,
                    "split your sequences and encode them for a Hugging Face model's labels and comparison"),
    "import-antiberty": Verb(antibody_jobs.ImportAntibertyArgs, antibody_jobs.import_antiberty,
                             "convert AntiBERTy's pickled weights once to a checked hf model folder (safetensors, MANIFEST)"),
    "antibody-data": Verb(antibody_jobs.AntibodyDataArgs, antibody_jobs.antibody_data,
                          "split the VH table by lineage into label contexts, calibration and test"),
    "antibody-compare": Verb(antibody_jobs.AntibodyCompareArgs, antibody_jobs.antibody_compare,
                             "CDR infilling: samplers calibrated to sequential's passes ÷ d, paired by context (PLL, recovery)"),
    "antibody-oracle-ceiling": Verb(antibody_oracle_jobs.AntibodyOracleArgs, antibody_oracle_jobs.antibody_oracle_ceiling,
                                    "Algorithm 1 with exact probing MI on a finished antibody-compare's first test "
                                    "contexts, paired with its head, EB and sequential"),
    "figure-antibody-mi": Verb(antibody_jobs.FigureAntibodyMiArgs, antibody_jobs.figure_antibody_mi,
                               "VH with CDRs masked: head vs exact MI map, ranks of known pairs (H94-H101, Cys pair)"),
    # backbones
    "sudoku-pretrain": Verb(sudoku_jobs.PretrainArgs, sudoku_jobs.pretrain, "train the Sudoku masked diffusion model"),
    "export-pretrained": Verb(pretrained_jobs.ExportPretrainedArgs, pretrained_jobs.export_pretrained,
                              "ship a trained backbone to resources/pretrained/ with its sha256 manifest"),
    "import-pretrained": Verb(pretrained_jobs.ImportPretrainedArgs, pretrained_jobs.import_pretrained,
                              "make a shipped backbone the model of a run, after checking its hashes"),
    "protein-pretrain": Verb(protein_jobs.PretrainProteinArgs, protein_jobs.pretrain_protein,
                             "train the small protein MDM (an ESM-C) with masked diffusion"),
    "column-pretrain": Verb(column_jobs.ColumnPretrainArgs, column_jobs.column_pretrain,
                            "train a masked diffusion model over a family's alignment columns (Potts + transformer)"),
    # MI labels and head (either domain: it comes from the checkpoint)
    "label": Verb(mi_jobs.LabelArgs, mi_jobs.label, "label one shard of contexts with ground-truth probing MI"),
    "train-head": Verb(mi_jobs.TrainHeadArgs, mi_jobs.train_head_job,
                       "train the MI head on probing labels and report its fidelity"),
    "head-fidelity": Verb(mi_jobs.HeadFidelityArgs, mi_jobs.head_fidelity,
                          "an existing MI head's fidelity on label shards, with bootstrap intervals over contexts",
                          user=True),
    # decoding and comparisons
    "sudoku-evaluate": Verb(sudoku_jobs.EvaluateArgs, sudoku_jobs.evaluate, "decode a puzzle CSV with one sampler and score it",
                     examples=sudoku_jobs.EVAL_EXAMPLES),
    "generate": Verb(generate_jobs.GenerateArgs, generate_jobs.generate_jobs,
                     "generate proteins from fully masked sequences with a sampler",
                     examples=generate_jobs.GENERATE_EXAMPLES),
    "sudoku-compare": Verb(sudoku_compare_jobs.CompareArgs, sudoku_compare_jobs.sudoku_compare,
                           "calibrate every sampler to common pass budgets and compare them pairwise"),
    "sudoku-compare-part": Verb(sudoku_compare_jobs.ComparePartArgs, sudoku_compare_jobs.sudoku_compare_part,
                                "one part of sudoku-compare (sequential, or one sampler family calibrated and decoded)"),
    "protein-compare-part": Verb(protein_compare_jobs.ProteinComparePartArgs, protein_compare_jobs.protein_compare_part,
                                 "one part of protein-compare (sequential, or one sampler family calibrated and decoded)"),
    "hf-compare": Verb(protein_compare_jobs.HfCompareArgs, protein_compare_jobs.protein_compare,
                       "protein-compare on a Hugging Face model (--model an hf folder): calibrated samplers by JSD"),
    "protein-compare": Verb(protein_compare_jobs.ProteinCompareArgs, protein_compare_jobs.protein_compare,
                            "calibrate every sampler to common pass budgets and compare proteins by JSD"),
    "family-score": Verb(family_jobs.FamilyScoreArgs, family_jobs.family_score,
                         "score proteins against a family: HMM pass rate, C_ij / f_i / MI r, diversity, cluster JSD"),
    "sudoku-oracle-ceiling": Verb(sudoku_oracle_jobs.CeilingArgs, sudoku_oracle_jobs.sudoku_oracle_ceiling,
                                  "decode with the exact-MI oracle at the head's calibrated settings"),
    "protein-oracle-ceiling": Verb(family_oracle_jobs.ProteinCeilingArgs, family_oracle_jobs.protein_oracle_ceiling,
                                   "generate proteins with the MI oracle, the head and sequential; per-sequence scores"),
    "testbed": Verb(testbed_jobs.TestbedArgs, testbed_jobs.testbed,
                    "exact Potts-chain testbed: every rule's exact KL to the true joint at equal passes, per regime"),
    "testbed-remask": Verb(testbed_jobs.RemaskArgs, testbed_jobs.testbed_remask,
                           "the remasking rules on small Potts chains: exact KL over every path, at equal passes"),
    "testbed-place": Verb(place_jobs.PlaceArgs, place_jobs.testbed_place,
                          "EB's dependence share at a budget, for the testbed's regimes or one backbone: its place on the map"),
    # tables and figures
    "sudoku-table": Verb(sudoku_report_jobs.GatherArgs, sudoku_report_jobs.gather, "gather evaluation summaries into one tidy table"),
    "sudoku-budgets": Verb(sudoku_compare_jobs.SummaryArgs, sudoku_compare_jobs.budgets_summary,
                            "who wins at each calibrated budget, over every set's budgets table"),
    "figure-budgets-summary": Verb(budgets_summary_job.BudgetsSummaryArgs, budgets_summary_job.figure_budgets_summary,
                                   "quality against passes of every calibrated family, one panel per comparison"),
    "sudoku-verdicts": Verb(sudoku_compare_jobs.VerdictsArgs, sudoku_compare_jobs.sudoku_verdicts,
                             "two or more sudoku-compare runs' verdicts side by side (e.g. two calibration seeds)"),
    "paper-table": Verb(sudoku_report_jobs.PaperTableArgs, sudoku_report_jobs.paper_table_job,
                        "our Sudoku results laid out beside the paper's table"),
    "figure-speed-quality": Verb(sudoku_report_jobs.SpeedQualityArgs, sudoku_report_jobs.figure_speed_quality,
                                 "mean passes vs accuracy, one curve per sampler"),
    "figure-mi-map": Verb(sudoku_report_jobs.FigureMiMapArgs, sudoku_report_jobs.figure_mi_map,
                          "Figure-1-style MI map of one cell of a real puzzle"),
    "figure-scatter": Verb(mi_jobs.ScatterArgs, mi_jobs.figure_scatter,
                           "MI head vs probing label on the test pairs"),
    "protein-table": Verb(protein_report_jobs.ProteinTableArgs, protein_report_jobs.protein_table,
                          "gather protein generation summaries into one table"),
    "family-compare": Verb(family_jobs.FamilyCompareArgs, family_jobs.family_compare,
                           "co-variation (corrected-MI r, C_ij r) of protein-compare's calibrated runs, paired by budget"),
    "family-verdicts": Verb(family_jobs.FamilyVerdictsArgs, family_jobs.family_verdicts,
                            "several family-compare runs' co-variation verdicts side by side (e.g. two calibration seeds)"),
    "family-loss": Verb(family_jobs.FamilyLossArgs, family_jobs.family_loss,
                        "held-out masked-token loss of a family model at fixed mask rates, beside the profile baselines"),
    "family-table": Verb(family_jobs.FamilyTableArgs, family_jobs.family_table,
                         "gather family scores (sampler settings, ceiling, ardca, floor) into one table"),
    "figure-family-covariation": Verb(family_figure_jobs.CovariationFigureArgs, family_figure_jobs.figure_family_covariation,
                                      "mean passes vs co-variation (corrected-MI r, C_ij r) at calibrated budgets"),
    "figure-family-pass-rate": Verb(family_figure_jobs.PassRateFigureArgs, family_figure_jobs.figure_family_pass_rate,
                                    "mean passes vs HMM pass rate, fixed-grid settings and calibrated budgets"),
    "figure-family-mi": Verb(family_figure_jobs.FamilyMiArgs, family_figure_jobs.figure_family_mi,
                             "the MI head's map of one family context beside the family's column-pair MI"),
    "figure-column-contacts": Verb(column_jobs.ColumnContactsArgs, column_jobs.figure_column_contacts,
                                   "a column model's MI map beside ArDCA's couplings and the disulphide bonds"),
    "protein-paper-table": Verb(protein_report_jobs.ProteinPaperTableArgs, protein_report_jobs.protein_paper_table,
                                "our protein results beside the paper's table"),
    "figure-protein-speed-quality": Verb(protein_report_jobs.ProteinSpeedQualityArgs,
                                         protein_report_jobs.figure_protein_speed_quality,
                                         "NFE vs JSD, one curve per sampler"),
    "figure-protein-mi": Verb(protein_report_jobs.ProteinMiArgs, protein_report_jobs.figure_protein_mi,
                              "MI map of a generated protein and MI vs sequence separation"),
    # tracking
    "init-tracking": Verb(tracking_job.InitTrackingArgs, tracking_job.init_tracking,
                          "create the MLflow store before parallel jobs write to it"),
    "track": Verb(tracking_job.TrackArgs, tracking_job.track,
                  "mirror the jobs' spooled tracking records into MLflow (one run per job)", user=True,
                  examples=tracking_job.TRACK_EXAMPLES),
    # by hand, on the trained models
    "solve": Verb(solve.SolveArgs, solve.solve, "solve Sudoku puzzles with the trained model", user=True,
                  examples=solve.EXAMPLES),
    "infill": Verb(infill.InfillArgs, infill.infill, "fill the _ positions of templates with any backbone and sampler",
                   user=True, examples=infill.EXAMPLES),
    "mi-map": Verb(mi_map.MiMapArgs, mi_map.mi_map, "draw the MI head's predicted mutual information for one position",
                   user=True, examples=mi_map.EXAMPLES),
    "check-config": Verb(check_config.CheckConfigArgs, check_config.check_config,
                         "check a workflow config file against the schema", user=True, examples=check_config.EXAMPLES),
    "render-docs": Verb(docs_jobs.RenderDocsArgs, docs_jobs.render_docs,
                        "rewrite (or --check) the tables README.md and docs/ render from committed data files",
                        user=True, examples="  mdm-mi render-docs --check"),
}


class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Keeps the examples' line breaks and shows each flag's default when it has one (None: the help says
    what an omitted flag means), as it would be typed: a list's values spaced, ``none`` for an empty one."""

    def _get_help_string(self, action):
        text, default = action.help or "", action.default
        if action.required or not action.option_strings or not text or default is None or default is argparse.SUPPRESS:
            return text
        shown = (" ".join(map(str, default)) or "none") if isinstance(default, (list, tuple)) else str(default)
        return f"{text} (default: {shown.replace('%', '%%')})"  # argparse %-formats the help


class _Parser(argparse.ArgumentParser):
    """An argparse parser whose usage errors are one ``error: ...`` line (exit code 2)."""

    def error(self, message: str):
        self.exit(2, f"error: {message} (see '{self.prog} --help')\n")


def _path(text: str) -> Path:
    """A path flag's value: an empty one (an unset shell variable) is refused, not read as ``.``."""
    if not text.strip():
        raise argparse.ArgumentTypeError(f"an empty path {text!r}")
    return Path(text)


def _add_field(parser: argparse.ArgumentParser, f: dataclasses.Field, hints: dict, groups: dict) -> None:
    """Add one dataclass field as a ``--flag`` (or an optional positional argument)."""
    flag, tp = "--" + f.name.replace("_", "-"), hints[f.name]
    kw: dict = {"help": f.metadata.get("help", ""), "dest": f.name}
    has_default = f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
    if has_default:
        kw["default"] = f.default if f.default is not dataclasses.MISSING else f.default_factory()
    else:
        kw["required"] = True
    if f.metadata.get("positional"):  # e.g. the PUZZLE of ``mdm-mi solve PUZZLE``
        flag = f.name
        kw = {"help": kw["help"], "default": kw.get("default"), "nargs": "?", "metavar": f.name.upper()}
    origin, targs = typing.get_origin(tp), typing.get_args(tp)
    if tp is bool or set(targs) == {bool, type(None)}:  # ``bool | None``: --flag / --no-flag, None when neither
        kw["action"] = argparse.BooleanOptionalAction
    elif origin is tuple:  # given bare, a config-fed list is refused unless it may be empty (h's empty)
        bare = f.metadata.get("empty") or (has_default and "config" not in f.metadata)
        kw.update(nargs="*" if bare else "+", type=targs[0])
    elif origin is typing.Union or str(origin) == "<class 'types.UnionType'>":
        kw["type"] = next(a for a in targs if a is not type(None))
    else:
        kw["type"] = tp
    if kw.get("type") is Path:
        kw["type"] = _path
    group = f.metadata.get("group")
    if group and group not in groups:
        groups[group] = parser.add_argument_group(group)
    (groups[group] if group else parser).add_argument(flag, **kw)


def _add_tracking(parser: argparse.ArgumentParser) -> None:
    """:class:`TrackingFlags`' fields as flags (``--wildcard`` repeated, one tag each)."""
    g = parser.add_argument_group("tracking (MLflow mirror of the files this job writes)")
    for f in dataclasses.fields(TrackingFlags):
        repeated = f.name == "wildcard"
        g.add_argument(flag_name(f), default=[] if repeated else f.default, help=f.metadata["help"],
                       action="append" if repeated else "store", metavar="KEY=VALUE" if repeated else None)


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser with one sub-parser per verb of :data:`VERBS`."""
    parser = _Parser(prog="mdm-mi", description="Masked diffusion models with mutual-information heads.",
                     epilog="Using the trained models: mdm-mi solve --help, mdm-mi mi-map --help, "
                            "mdm-mi sudoku-evaluate --help.")
    sub = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
    for name, v in sorted(VERBS.items()):
        p = sub.add_parser(name, help=v.help, description=v.help, epilog=v.examples or None,
                           formatter_class=_HelpFormatter)
        hints, groups = typing.get_type_hints(v.args), {}
        for f in dataclasses.fields(v.args):
            _add_field(p, f, hints, groups)
        if not v.user:
            _add_tracking(p)
    return parser


def _tracking_args(ns: argparse.Namespace, args) -> TrackingArgs:
    """Tracking settings, their flags checked by the one validator first; the config-hash tag defaults to
    a hash of the job's own arguments, so it changes exactly when this job's configuration does."""
    flags = TrackingFlags(**{f.name: getattr(ns, f.name) for f in dataclasses.fields(TrackingFlags)} |
                          {"wildcard": tuple(ns.wildcard)})
    validate(flags)
    wildcards = dict(item.partition("=")[::2] for item in flags.wildcard)
    rule = flags.rule or ns.verb.replace("-", "_")  # every rule is named after its verb
    return TrackingArgs(flags.tracking_uri, flags.experiment, rule, wildcards, flags.config_hash or args_hash(args))


def args_hash(args) -> str:
    """Short stable hash of a verb's argument dataclass."""
    text = json.dumps(dataclasses.asdict(args), sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


# Old verb names, kept for one release (CHANGELOG.md): old → new. Each prints one note.
RENAMED = {"evaluate": "sudoku-evaluate", "sudoku-data": "prepare-sudoku"}


def renamed(argv: list[str]) -> list[str]:
    """``argv`` with an old verb name replaced by its new one (and a one-line note on stderr)."""
    if argv and argv[0] in RENAMED:
        print(f"note: `{argv[0]}` is now `{RENAMED[argv[0]]}`; the old name goes in the next release",
              file=sys.stderr)
        return [RENAMED[argv[0]], *argv[1:]]
    return argv


def _run(v: Verb, args, tracker) -> int:
    """Check every flag (the checks each field declares, :func:`mdm_mi.infra.validate.validate`), then run
    the verb → its exit code: a refused flag costs no work."""
    validate(args)
    return v.run(args, tracker) or 0


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` and run the verb → its exit code; expected errors become one line on stderr
    and exit code 2 (usage errors exit through argparse with the same one line). Run as the process's
    command (``argv`` None), freed memory stays in the process and its workers
    (:func:`mdm_mi.infra.memory.keep_freed_memory`: no page faults for arrays allocated again and again)."""
    if argv is None:
        keep_freed_memory()
    ns = build_parser().parse_args(renamed(sys.argv[1:] if argv is None else list(argv)))
    v = VERBS[ns.verb]
    args = v.args(**{f.name: getattr(ns, f.name) for f in dataclasses.fields(v.args)})
    try:
        if v.user:
            return _run(v, args, NullTracker())
        with open_tracker(_tracking_args(ns, args)) as tracker:  # a refused job is tracked as FAILED
            return _run(v, args, tracker)
    except USER_ERRORS as exc:
        print("error: " + " ".join(str(exc).split()), file=sys.stderr)  # always one line
        return 2
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130

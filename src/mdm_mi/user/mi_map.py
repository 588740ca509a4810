"""``mdm-mi mi-map``: the MI head's predicted mutual information between one masked position and
every other, drawn as a figure, plus the full N×N matrix as CSV.

    mdm-mi mi-map 53..7....6..195....98....6.8...6...34..8.3..17...2...6.6....28....419..5....8..79
    mdm-mi mi-map PUZZLE --cell 1,3 --exact --out map.png          # beside the exact probing MI

The model's domain picks how the input is read and drawn (:data:`DOMAINS`): a Sudoku puzzle on the
9×9 grid, or a protein sequence (``_`` = masked) as a bar chart over positions. Without ``--model``
the domain is guessed from the input (digits and dots: Sudoku).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from mdm_mi.models.domains import DOMAINS, backbone_name, guess_domain
from mdm_mi.infra.errors import InputError
from mdm_mi.infra.checkpoint import read_meta
from mdm_mi.infra.flags import h
from mdm_mi.infra.reader import canonical, read_items
from mdm_mi.models.loading import load_model, model_domain
from mdm_mi.mi.figures import mi_matrices, pick_cell, write_matrix_csv
from mdm_mi.models.run import ModelFlags, check_outputs, load_head_for, model_path, note, start
from mdm_mi.sudoku.grid import format_grid
from mdm_mi.sudoku.puzzles import read_puzzles

FIGURE_SUFFIXES = (".png", ".pdf", ".svg")
EXAMPLES = """examples:
  mdm-mi mi-map 53..7....6..195....98....6.8...6...34..8.3..17...2...6.6....28....419..5....8..79
  mdm-mi mi-map PUZZLE --cell 1,3 --exact --out map.png --csv map.csv

writes the figure (--out) and the N×N matrix as CSV rows i,j,head,exact (--csv; 0-based positions)"""


@dataclass(frozen=True)
class MiMapArgs(ModelFlags):
    context: str | None = field(default=None, metadata=h(
        "a Sudoku puzzle (81 characters, 0 or . blank) or a protein sequence (_ masked); - reads stdin",
        positional=True))
    file: Path | None = field(default=None, metadata=h(
        "read the input from a file instead: its first puzzle (one per line, or a CSV), or the first record "
        "of a FASTA file (.fasta, .fa, .faa)"))
    cell: str | None = field(default=None, metadata=h(
        "Sudoku: row,column (1-based, e.g. 1,3); protein: position (1-based); default: the masked one "
        "with the most total MI"))
    exact: bool = field(default=False, metadata=h("also compute the exact MI by probing the model (slower)"))
    out: Path = field(default=Path("mi_map.png"), metadata=h("figure (.png, .pdf or .svg)"))
    csv: Path | None = field(default=None, metadata=h("matrix CSV; default: --out with suffix .csv"))


def _check_outputs(args) -> Path:
    """Refuse outputs that cannot be written → the CSV path."""
    csv_path = Path(args.csv) if args.csv is not None else Path(args.out).with_suffix(".csv")
    if Path(args.out).suffix.lower() not in FIGURE_SUFFIXES:
        raise InputError(f"--out {args.out} must end in {', '.join(FIGURE_SUFFIXES)}")
    if csv_path.resolve() == Path(args.out).resolve():
        raise InputError(f"--csv and --out are the same file: {csv_path}")
    check_outputs(args.out, csv_path)
    return csv_path


def _input_text(args) -> str:
    """The input as written (:func:`mdm_mi.infra.reader.read_items`: the argument, the first line of stdin,
    the first record or line of ``--file``), or the first puzzle of a puzzle CSV."""
    if args.file is not None and args.context is None and Path(args.file).suffix.lower() == ".csv":
        return format_grid(read_puzzles(None, Path(args.file))[0].tokens)
    return read_items(args.context, args.file, "input")[0].text


def _one_char(model: Path | None) -> bool:
    """Whether the model's tokens are single characters (every native domain's are; a Hugging Face
    model's alphabet, recorded in its ``meta.json``, may hold words)."""
    tokens = read_meta(model).get("tokens") if model is not None else None
    return not tokens or all(len(t) == 1 for t in tokens)


def _model_and_domain(args, text: str) -> tuple[Path | None, str]:
    """``--model`` and its recorded domain, or (None, the domain guessed from the input)."""
    if args.model is None:
        return None, guess_domain(text)

    return Path(args.model), model_domain(args.model)


def _load_backbone(args, model: Path | None, domain: str, device: str):
    """The ``domain`` backbone (``--model`` or found in results/) → ``(backbone, its folder)``."""
    path = model if model is not None else model_path(args, domain)
    return load_model(path, device, domain)[0], path


def mi_map(args: MiMapArgs, tracker) -> None:
    """Check the input, cell and outputs before loading anything, then draw and write the CSV."""
    del tracker
    csv_path = _check_outputs(args)
    text = _input_text(args)
    model, domain = _model_and_domain(args, text)
    text = canonical(text, _one_char(model))  # spaces and line breaks read once, as every verb reads them
    dom = DOMAINS[domain].mapper()
    context = dom.check(text)
    dom.parse_cell(args.cell, context)  # a bad --cell fails before the model loads
    device = start(args)
    backbone, model = _load_backbone(args, model, domain, device)
    note(f"model: {model}", args.quiet)
    head = load_head_for(args, backbone, model, domain, device)
    tokens = dom.tokens(context, backbone, device)
    if args.exact:
        note(f"probing the model for the exact MI ({dom.probe_passes(tokens, backbone)} passes)...", args.quiet)
    pred, label = mi_matrices(backbone, head, tokens, args.exact)
    masked = (tokens == backbone.mask_id).cpu()
    cell = pick_cell(pred, masked, dom.parse_cell(args.cell, context))
    dom.draw(context, pred, label, cell, args.out, backbone_name(model))
    write_matrix_csv(csv_path, pred, label)
    print(dom.summary(context, pred, label, cell))
    print(f"wrote {args.out} and {csv_path}")

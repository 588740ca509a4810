"""``mdm-mi infill``: fill the ``_`` positions of templates with any backbone and any sampler.

    mdm-mi infill "EVQLVESGGGLVQPGGSLRLSCAASGFTFSSYAMSWVRQAPGKGLEWVSAISGSGGSTYYADSVKGRFTISRDNSKNTLYLQMNSLRAEDTAVYYC__________WGQGTLVTVSS" \\
        --model results/antibody/hf/model --sampler eb --gamma 1.0 --n 2
    mdm-mi infill --file templates.fasta --sampler mi --budget 1/4 --out fills.fasta
    mdm-mi infill --file vh.tsv --sampler naive --budget 1/3       # TSV: template, or sequence + mask

A template is the backbone's input with ``_`` at every position to fill (a protein or antibody
sequence; for a Sudoku model, 81 digits with ``_``, ``.`` or ``0`` blank). Templates are read by the
one reader (:mod:`mdm_mi.infra.reader`): ``--file`` takes FASTA (records are templates), a TSV or CSV
with a ``template`` column, or ``sequence`` and ``mask`` columns (``mask``: as long as ``sequence``,
``_`` or ``1`` at the positions to fill), or any other text file, one template per line; case is kept. The sampler runs at the
settings given (omitted: the model's calibrated values, :mod:`mdm_mi.core.fallbacks`) or, with ``--budget 1/d``, at the setting
whose passes on these templates are sequential's ÷ d (sequential takes one pass per ``_``). Output:
FASTA, one record per fill, its header naming the template, the fill, the passes and the sampler.
Every input is checked before anything is decoded or written.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import torch

from mdm_mi.core.backbone import GRID, capabilities
from mdm_mi.core.fallbacks import read_calibrated
from mdm_mi.core.sampler_table import SAMPLERS, SamplerFlags, USER_SAMPLERS, swept_settings
from mdm_mi.evaluation.infill import calibrate_to, family_of, fill, max_masked, parse_budget
from mdm_mi.infra.errors import InputError
from mdm_mi.infra.flags import h
from mdm_mi.infra.io import atomic_path
from mdm_mi.infra.reader import MASK_CHAR as MASK, canonical, positions, read_items
from mdm_mi.models.loading import SEQUENCES, model_domain
from mdm_mi.models.run import ModelFlags, check_outputs, load_backbone_for, note, pairwise_from_args, start
from mdm_mi.sampling.registry import SAMPLER_CLASSES, sampler_from_args
from mdm_mi.sudoku.grid import MASK_ID

SUDOKU_BLANKS = "_.0"
EXAMPLES = """examples:
  mdm-mi infill "EVQLVESGGGLVQPGGSLRLSCAASGFTFSSYAMSWVRQAPGKGLEWVSAISGSGGSTYYADSVKGRFTISRDNSKNTLYLQMNSLRAEDTAVYYC__________WGQGTLVTVSS" --model results/antibody/hf/model --sampler eb --gamma 1
  mdm-mi infill --file templates.fasta --sampler mi --budget 1/4 --n 2 --out fills.fasta
  mdm-mi infill --file vh.tsv --sampler naive --budget 1/3      # TSV: template, or sequence + mask columns

exit code 0, or 2 for bad input (one line: no _, a letter outside the alphabet, too long for the model)"""


@dataclass(frozen=True)
class InfillArgs(SamplerFlags, ModelFlags):
    template: str | None = field(default=None, metadata=h(
        "a sequence with _ at the positions to fill; - reads templates from stdin (one per line)", positional=True))
    file: Path | None = field(default=None, metadata=h(
        "templates: FASTA, a TSV/CSV with a 'template' column or 'sequence' + 'mask' columns, or one per line"))
    budget: str | None = field(default=None, metadata=h(
        "1/d: calibrate the sampler's parameter to sequential's passes ÷ d on these templates"))
    n: int = field(default=1, metadata=h("fills per template"))
    temperature: float = field(default=1.0, metadata=h("sampling temperature (0 = the most likely token)"))
    seed: int = field(default=0, metadata=h("random seed (same seed, same fills)"))
    batch_size: int = field(default=64, metadata=h("templates decoded together"))
    out: Path | None = field(default=None, metadata=h("output FASTA; default: stdout"))


def read_templates(args) -> list[tuple[str, str]]:
    """``(name, template)`` pairs from the argument, stdin or ``--file``, read by the one reader
    (:func:`mdm_mi.infra.reader.read_items`: case kept, a FASTA record's line breaks spaces); one-line errors."""
    return [(item.name, item.text) for item in read_items(args.template, args.file, "template")]


def encode_templates(backbone, templates: list[tuple[str, str]], device) -> torch.Tensor:
    """The templates as backbone input ``(B, N)``, each checked: at least one ``_``, letters of the
    model's alphabet, no longer than the model takes (one line naming the template otherwise)."""
    if not templates:
        raise InputError("no templates given")
    for name, t in templates:
        if MASK not in t and not (_is_grid(backbone) and any(c in t for c in SUDOKU_BLANKS)):
            raise InputError(f"{name} has no {MASK} to fill")
    if _is_grid(backbone):
        return _grid_tokens(backbone, templates, device)
    limit = getattr(backbone, "max_length", None)
    for name, t in templates:
        n = len(positions(t, getattr(backbone, "one_char_tokens", True)))
        if limit is not None and n > limit:
            raise InputError(f"{name} has {n} positions; the model takes at most {limit}")
    one_char = getattr(backbone, "one_char_tokens", True)  # a native backbone's residues are characters
    try:
        return backbone.encode([canonical(t, one_char) for _, t in templates], device)
    except InputError as exc:  # the backbone names the template by index; name it as the user did
        raise InputError(f"{_named(str(exc), templates)}") from None


def _named(message: str, templates: list[tuple[str, str]]) -> str:
    parts = message.split(" ", 2)
    if len(parts) == 3 and parts[0] == "sequence" and parts[1].isdigit():
        return f"{templates[int(parts[1])][0]} {parts[2]}"
    return message


def _is_grid(backbone) -> bool:
    return capabilities(backbone).frame == GRID  # the Sudoku model: 81 cells, digits 1..9


def _grid_tokens(backbone, templates, device) -> torch.Tensor:
    rows = []
    for name, t in templates:
        t = canonical(t, one_char=True)
        if len(t) != 81 or any(c not in "123456789" + SUDOKU_BLANKS for c in t):
            raise InputError(f"{name}: a Sudoku template is 81 characters of 1-9 with _, . or 0 blank")
        rows.append([MASK_ID if c in SUDOKU_BLANKS else int(c) - 1 for c in t])
    return torch.tensor(rows, dtype=torch.long, device=device)


def decode_rows(backbone, tokens: torch.Tensor) -> list[str]:
    """Filled tokens ``(B, N)`` → strings (sequences, or 81 digits for a grid)."""
    if _is_grid(backbone):
        return ["".join(str(int(v) + 1) for v in row) for row in tokens.tolist()]
    return backbone.decode_tokens(tokens)


def _settings(args) -> dict:
    """The calibrated family's settings (config key → value) from the decoding flags."""
    own = {s.key: getattr(args, s.flag) for s in swept_settings()}
    return {k: v for k, v in own.items() if v is not None} | {"mi_on_reject": args.on_reject,
                                                               "mi_charge_first": args.charge_first}


def _sampler(args, backbone, tokens, pairwise, model_dir: Path, quiet: bool):
    """The fixed-setting sampler, or the one calibrated to ``--budget`` on the templates → (sampler, note)."""
    if args.budget is None:
        sampler = sampler_from_args(args, allowed=USER_SAMPLERS, calibrated=read_calibrated(model_dir))
        return sampler, ""
    divisor = parse_budget(args.budget)
    fam = family_of(args.sampler, max_masked(backbone, tokens), _settings(args), SAMPLER_CLASSES)
    point = calibrate_to(backbone, tokens, fam, divisor, args.seed, args.temperature, pairwise,
                         log=lambda s: note(s, quiet), batch_size=args.batch_size)
    return fam.build(point.value), f" budget=1/{divisor}"


def _check_args(args) -> None:
    """Flag checks that need no model, beyond each flag's own (the CLI's validator, infra/validate.py)."""
    if args.sampler not in USER_SAMPLERS:
        raise InputError(f"unknown sampler {args.sampler!r}; choose one of {', '.join(USER_SAMPLERS)}")
    if args.budget is not None:
        parse_budget(args.budget)
        param = SAMPLERS[args.sampler].calibration and SAMPLERS[args.sampler].calibration.param
        if param and getattr(args, param, None) is not None:
            raise InputError(f"give --{param} or --budget, not both (the budget sets {param})")
    check_outputs(args.out)


def infill(args: InfillArgs, tracker) -> None:
    """Check the flags and templates, load the model, (calibrate,) fill, write FASTA."""
    del tracker
    _check_args(args)
    templates = read_templates(args)
    device = start(args, args.seed)
    domain = SEQUENCES if args.model is None else _domain(args.model)
    backbone, path, found = load_backbone_for(args, domain, device)
    tokens = encode_templates(backbone, templates, device)
    with pairwise_from_args(args, backbone, path, found, device) as pairwise:
        sampler, calibrated = _sampler(args, backbone, tokens, pairwise, path, args.quiet)
        res = fill(backbone, tokens, sampler, args.n, args.seed, args.temperature, pairwise, args.batch_size)
    rows, params = decode_rows(backbone, res.tokens), " ".join(f"{k}={v}" for k, v in sampler.params().items())
    lines = []
    for i, (row, passes) in enumerate(zip(rows, res.passes.tolist())):
        name, _ = templates[i % len(templates)]
        lines += [f">{name} fill={i // len(templates) + 1} passes={passes} sampler={sampler.name} {params}{calibrated}".rstrip(),
                  row]
    _write("\n".join(lines) + "\n", args.out)
    note(f"{len(rows)} fills, mean passes {float(res.passes.float().mean()):.2f} ({path})", args.quiet)


def _domain(model: Path) -> str:
    return model_domain(model)


def _write(text: str, out: Path | None) -> None:
    if out is None:
        print(text, end="")
        return
    with atomic_path(out) as tmp:
        Path(tmp).write_text(text)

"""suggest-matches as a user runs it, and what accepting proposals does to the file: fused
projections flagged rather than paired, rejections remembered, --apply undoable, --export
read back as msprobe's .vis.config, graph_build --auto-match, clear one-line refusals."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from fused_models import dump

from graphboard import matching
from graphboard.pipeline import BuildOptions, run_build
from graphboard.store.reader import GraphKey, open_vis_db, overlay
from graphboard.suggest import propose
from graphboard.suggest.apply import local_settings
from graphboard.suggest.rejections import reject
from renamed_dumps import RenamedCompare
from test_cli import graph_build, graphboard_command

FUSED = {
    ("Module.attention.qkv.Linear.forward.0",): {"q", "k", "v"},
    ("Module.mlp.gate_up.Linear.forward.0",): {"gate", "up"},
}


@pytest.fixture(scope="module")
def fused_compare(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fused")
    target, golden = dump(root / "target", fused=True), dump(root / "golden", fused=False)
    return run_build(BuildOptions(target=target, golden=golden, output_dir=root / "out")).path


def _copy(path: Path, into: Path) -> Path:
    into.mkdir(parents=True, exist_ok=True)
    return Path(shutil.copy2(path, into / path.name))


def test_fused_projections_are_flagged_not_paired(fused_compare: Path, cache_dir: Path) -> None:
    with open_vis_db(fused_compare, cache_dir) as db:
        found = propose(db, 0, 0)
    flagged = {group.target: group for group in found.fused}
    for target, parts in FUSED.items():
        group = flagged[target]
        assert {name.split(".")[2] for name in group.golden} == parts
        assert "does the work of" in group.reason and 0 < group.confidence <= 1
    # inside a fused group its children fuse alike: parameters_grad, the linear call
    grads = flagged[("Module.attention.qkv.Linear.parameters_grad.0",)]
    assert {name.split(".")[2] for name in grads.golden} == {"q", "k", "v"}
    assert grads.reason.startswith("inside fused Module.attention.qkv.Linear.backward.0; ")
    assert len(flagged[("Functional.linear.0.forward",)].golden) == 3
    paired = {s.target for s in found.suggestions} | {s.golden for s in found.suggestions}
    assert not any(".qkv." in n or ".gate_up." in n or ".q.Linear" in n for n in paired)
    # the rest of the layer still pairs: proj with proj, down with down
    by_target = {s.target: s.golden for s in found.suggestions}
    assert by_target["Module.attention.proj.Linear.forward.0"] == (
        "Module.attention.proj.Linear.forward.0"
    )
    assert by_target["Module.mlp.down.Linear.backward.0"] == "Module.mlp.down.Linear.backward.0"


def test_a_rejected_pair_is_not_proposed_again(
    renamed: Callable[[int], RenamedCompare], tmp_path: Path
) -> None:
    path = _copy(renamed(2).renamed, tmp_path)
    pair = ("Module.blocks.0.Block.forward.0", "Module.layers.0.TransformerLayer.forward.0")
    with local_settings(path) as settings:
        with open_vis_db(path, settings.cache_dir) as db:
            assert (pair[0], pair[1]) in {
                (s.target, s.golden) for s in propose(db, 0, 0).suggestions
            }
        reject(path, settings, 0, 0, *pair)
        run = graphboard_command("suggest-matches", path, "--json", "--min-confidence", "0")
    shown = json.loads(run.stdout)["suggestions"]
    assert pair not in {(s["target"], s["golden"]) for s in shown}


def test_apply_is_one_undoable_import_action(
    renamed: Callable[[int], RenamedCompare], tmp_path: Path
) -> None:
    path = _copy(renamed(2).renamed, tmp_path)
    key = GraphKey("NPU", 0, 0)
    with local_settings(path) as settings, open_vis_db(path, settings.cache_dir) as db:
        grey_before = int((overlay.graph_view(db, key).columns["matched"] == 0).sum())
    applied = graphboard_command("suggest-matches", path, "--apply")
    assert applied.returncode == 0, applied.stderr
    assert "matched" in applied.stderr.splitlines()[-1]
    with local_settings(path) as settings:
        with open_vis_db(path, settings.cache_dir) as db:
            assert int((overlay.graph_view(db, key).columns["matched"] == 0).sum()) == 0
            assert [a.kind for a in overlay.match_history(db, 0, 0)] == ["import"]
            assert len(overlay.manual_pairs(db, 0, 0)) == grey_before
        matching.undo(path, settings, 0, 0)
        with open_vis_db(path, settings.cache_dir) as db:
            assert int((overlay.graph_view(db, key).columns["matched"] == 0).sum()) == grey_before
    # nothing is proposed for nodes already matched: a second --apply after a first adds none
    graphboard_command("suggest-matches", path, "--apply")
    again = graphboard_command("suggest-matches", path, "--json")
    assert json.loads(again.stdout)["suggestions"] == []


def test_export_writes_an_msprobe_vis_config(
    renamed: Callable[[int], RenamedCompare], tmp_path: Path
) -> None:
    path = _copy(renamed(2).renamed, tmp_path)
    config = tmp_path / "pairs.vis.config"
    run = graphboard_command("suggest-matches", path, "--export", config, "--json")
    assert run.returncode == 0, run.stderr
    written = json.loads(config.read_text())
    shown = json.loads(run.stdout)["suggestions"]
    assert written == {s["target"]: s["golden"] for s in shown}
    assert (
        written["Module.blocks.1.mlp.Sequential.forward.0"] == "Module.layers.1.ffn.MLP.forward.0"
    )
    # and the viewer's import takes it as it is
    with local_settings(path) as settings:
        outcome = matching.import_config(
            path, settings, 0, 0, written, descendants=False, twins=False
        )
    assert len(outcome.pairs) == len(written) and outcome.skipped == []


def test_graph_build_auto_match(renamed: Callable[[int], RenamedCompare], tmp_path: Path) -> None:
    root = renamed(2).renamed.parents[1]
    run = graph_build(
        "-tp",
        root / "target",
        "-gp",
        root / "golden-renamed",
        "-o",
        tmp_path,
        "--auto-match",
        "0.6",
    )
    assert run.returncode == 0, run.stderr
    assert "--auto-match 0.6: matched 139 node(s), 0 refused" in run.stderr
    assert "0 unmatched" in run.stderr
    refused = graph_build("-tp", root / "target", "-o", tmp_path, "--auto-match", "0.6")
    assert refused.returncode == 1
    assert refused.stderr.strip().splitlines()[-1] == (
        "graph_build: error: --auto-match needs a golden dump (-gp) and a confidence from 0 to 1"
    )


def test_refusals_are_one_line(renamed: Callable[[int], RenamedCompare], tmp_path: Path) -> None:
    root = renamed(2).renamed.parents[1]
    build = run_build(BuildOptions(target=root / "target", output_dir=tmp_path / "b")).path
    junk = tmp_path / "junk.vis.db"
    junk.write_text("not a database")
    read_only = _copy(renamed(2).renamed, tmp_path / "ro")
    read_only.chmod(0o444)
    cases = {
        (str(tmp_path / "none.vis.db"),): f"{tmp_path / 'none.vis.db'}: no such file",
        (str(junk),): "junk.vis.db: not an SQLite database",
        (str(build),): f"{build.name}: a build of one run, not a compare: nothing to match",
        (str(renamed(2).renamed), "--step", "3"): (
            f"{renamed(2).renamed.name}: no compare graph at step 3, rank any"
        ),
        (str(read_only), "--apply"): (
            f"{read_only.name}: the file is read-only; manual matches cannot be saved"
        ),
    }
    for args, message in cases.items():
        run = graphboard_command("suggest-matches", *args)
        assert run.returncode == 1
        assert run.stderr.splitlines() == [f"graphboard: error: {message}"], run.stderr
    read_only.chmod(0o644)
    bad = graphboard_command("suggest-matches", build, "--min-confidence", "2")
    assert bad.returncode == 2 and "a confidence from 0 to 1, not '2'" in bad.stderr


def test_every_step_and_rank_of_a_real_ddp_dump(tmp_path: Path, cache_dir: Path) -> None:
    """msprobe's own 2-rank, 2-step dump (convnet-ddp2) with its golden renamed: proposals for
    each (step, rank), right by the renaming; --export wants one of them."""
    from fixture_cases import fixture_path
    from renamed_dumps import Renaming, rename_dump

    renaming = Renaming(
        segments={"stem": "backbone", "head": "classifier"},
        classes={"ResidualBlock": "BasicBlock"},
    )
    case = fixture_path("convnet-ddp2")
    golden = rename_dump(case / "golden", tmp_path / "golden", renaming)
    path = run_build(BuildOptions(target=case / "target", golden=golden, output_dir=tmp_path)).path
    run = graphboard_command("suggest-matches", path, "--json")
    assert run.returncode == 0, run.stderr
    shown = json.loads(run.stdout)["suggestions"]
    assert {(s["step"], s["rank"]) for s in shown} == {(0, 0), (0, 1), (1, 0), (1, 1)}
    assert all(renaming.name(s["target"]) == s["golden"] for s in shown)
    refused = graphboard_command("suggest-matches", path, "--export", tmp_path / "x.vis.config")
    assert refused.returncode == 1 and "give --step and --rank" in refused.stderr
    one = tmp_path / "one.vis.config"
    run = graphboard_command("suggest-matches", path, "--step", "1", "--rank", "1", "--export", one)
    assert run.returncode == 0, run.stderr
    assert set(json.loads(one.read_text()).values()) == {
        s["golden"] for s in shown if (s["step"], s["rank"]) == (1, 1)
    }

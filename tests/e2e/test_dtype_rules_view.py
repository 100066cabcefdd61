"""The viewer's "msprobe rules / dtype-aware" switch in a real browser, on a compare built in
the test (a bf16 GPT whose layer-1 MLP output is 5% off, against fp32): colours, badges, the
filter and the first introduced error follow the switch, the address keeps it, and the detail
panel shows each parameter's noise band beside its measured difference."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest
from browser_support import Viewer

from ci_support import live_server
from dtype_dumps import Dumps, dtype_dumps
from fixture_cases import reference_db
from graphboard.server.settings import Settings

__all__ = ["dtype_dumps"]

MLP = "Module.blocks.1.mlp."
EMBEDDING = "Module.embed.Embedding.forward.0"


@pytest.fixture(scope="module")
def server(dtype_dumps: Dumps, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """This module's own server (conftest's ``viewer`` opens pages on it), over the compare."""
    data = tmp_path_factory.mktemp("dtype-rules-view")
    shutil.copyfile(dtype_dumps.compare("graphboard", "gpt", 2, "scaled"), data / "scaled.vis.db")
    shutil.copyfile(reference_db("convnet-stats"), data / "theirs.vis.db")  # msprobe's file
    state = tmp_path_factory.mktemp("dtype-rules-state")
    with live_server(Settings(data_dir=data, state_dir=state)) as base:
        yield base


def _first_error(viewer: Viewer) -> str:
    page = viewer.page
    page.locator("#first-error").click()
    selected = page.locator("#pane-target .tree-row.selected")
    selected.wait_for()
    return str(selected.get_attribute("data-name"))


def test_the_switch_changes_colours_filter_and_first_error(viewer: Viewer) -> None:
    """graphboard's file opens under dtype-aware, the default (issue 29); msprobe's rules are
    one switch away and the address keeps that choice."""
    page = viewer.page
    viewer.open(graph="scaled")
    viewer.row("target", EMBEDDING).wait_for()
    assert page.locator("#rules-select").input_value() == "dtype-aware"
    assert "rules=" not in page.evaluate("location.search")  # the default is left out
    ours_fill = viewer.label_color("target", EMBEDDING)  # a bf16 node within its band: it passes
    first = _first_error(viewer)
    assert first.startswith(MLP)
    page.locator('#precision-filters input[value="error"]').check()
    page.locator(f'#filter-results .result-row[data-name^="{MLP}"]').first.wait_for()
    shown = page.locator("#filter-results").inner_text()
    listed = [line for line in shown.splitlines() if line.startswith(("Module.", "Functional."))]
    assert len(listed) == 1 and listed[0].startswith(MLP), shown
    viewer.shot("dtype-aware-first-error")
    page.locator("#rules-select").select_option("msprobe")
    page.wait_for_function("() => location.search.includes('rules=msprobe')")
    viewer.row("target", EMBEDDING).wait_for()
    page.wait_for_function(
        '([name, before]) => { const row = document.querySelector(`#pane-target .tree-row[data-name="${name}"] .label`);'
        " return row && row.style.backgroundColor !== before; }",
        arg=[EMBEDDING, ours_fill],
    )
    assert viewer.label_color("target", EMBEDDING) != ours_fill  # msprobe's dtype error
    page.locator('#precision-filters input[value="error"]').check()
    page.locator("#filter-results .result-row").first.wait_for()
    assert page.locator("#filter-results").inner_text() != shown  # every bf16 node
    # the address keeps the rule set: a reload opens the same view
    page.reload()
    page.wait_for_selector("body[data-ready=true]")
    assert page.locator("#rules-select").input_value() == "msprobe"


def test_the_detail_panel_shows_band_beside_difference(viewer: Viewer) -> None:
    page = viewer.page
    viewer.open(graph="scaled", rules="dtype-aware")
    first = _first_error(viewer)
    section = page.locator("#details #rule-verdict")
    section.wait_for()
    text = section.inner_text()
    assert "Noise band" in text and "Measured d" in text
    assert "introduced here" in text
    introducing = section.locator("tr.introduces").all_inner_texts()
    # the out projection's weight and bias, both 5% off: each beyond its one rounding
    assert sorted(text.split()[0] for text in introducing) == [
        "parameters.bias",
        "parameters.weight",
    ]
    assert first.startswith(MLP)
    viewer.row("target", EMBEDDING).click()
    page.wait_for_function(
        "() => (document.querySelector('#details #rule-verdict .rule-summary')?.textContent || '').startsWith('pass')"
    )
    page.locator("#rules-select").select_option("msprobe")
    viewer.row("target", EMBEDDING).click()
    page.locator("#details .detail-section").first.wait_for()
    assert page.locator("#details #rule-verdict").count() == 0


def test_the_filter_counts_show_before_a_box_is_ticked(viewer: Viewer) -> None:
    """Under dtype-aware rules the level counts stayed blank until a box was ticked (the file
    listing counts by msprobe's rules); they are the rule set's own from the start."""
    page = viewer.page
    viewer.open(graph="scaled", rules="dtype-aware")
    levels = ("error", "warning", "pass")
    counts = (
        "(levels) => levels.map((level) =>"
        ' document.querySelector(`#precision-filters [data-count="${level}"]`).textContent)'
    )
    page.wait_for_function(
        f"(levels) => ({counts})(levels).every((text) => text !== '')", arg=levels
    )
    before = page.evaluate(counts, levels)
    page.locator('#precision-filters input[value="error"]').check()
    page.locator("#filter-results .result-row").first.wait_for()
    assert page.evaluate(counts, levels) == before  # what the first filter then counts


def test_an_msprobe_file_opens_under_msprobes_rules(viewer: Viewer) -> None:
    """msprobe's file holds no dtype-aware verdicts: it opens under msprobe's rules (not an
    error), the switch cannot offer the other, and its first error is msprobe's."""
    page = viewer.page
    viewer.open(graph="theirs")
    viewer.row("target", "DefaultModel").wait_for()
    assert page.locator("#rules-select").input_value() == "msprobe"
    assert page.locator('#rules-select option[value="dtype-aware"]').is_disabled()
    assert _first_error(viewer) == "Functional.gelu.0.forward"

"""Open a .trend.db with msprobe's own trend tooling (trend_analyzer's MonvisService, the code
behind its TensorBoard "Trend Analyzer" tab) and print, as JSON, what it answers: metrics and
their statistics, steps, ranks, modules, tags, a rank heatmap and a module's trend, per metric.
Run it with msprobe's Python (the project never imports msprobe); exits 1 if the tooling
refuses a query."""

from __future__ import annotations

import json
import sys

from trend_analyzer.server.services.monvis_service import MonvisService


def main() -> int:
    service = MonvisService(sys.argv[1])
    if not service.is_db_connected:
        print(json.dumps({"error": "not connected"}))
        return 1
    answers: dict[str, object] = {}
    metrics = service.get_metrics_stat()
    answers["metrics"] = sorted((m["name"], sorted(m["stats"])) for m in metrics.get("data", []))
    failed = not metrics.get("success")
    for metric, stats in answers["metrics"]:
        modules = service.get_values(metric, stats[0], "module_name", [])
        steps = service.get_values(metric, stats[0], "step", [])
        ranks = service.get_values(metric, stats[0], "rank", [])
        tags = service.get_tags(metric)
        results = [modules, steps, ranks, tags]
        names = {int(k): v for k, v in modules.get("data", {}).items()}
        first_target = min(names) if names else 0
        heatmap = service.get_heatmap_data(metric, "norm", "rank", "0", [])
        trend = service.get_trend_data(metric, "norm", "step", 0, first_target, [])
        results += [heatmap, trend]
        failed = failed or not all(r.get("success") for r in results)
        answers[metric] = {
            # module names carry the target id: keep the name part (id_vpp_name_micro)
            "modules": sorted(v.split("_", 2)[2] for v in names.values()),
            "steps": len(steps.get("data", {})),
            "ranks": len(ranks.get("data", {})),
            "tags": sorted((t["text"], t["category"]) for t in tags.get("data", [])),
            "heatmap": sorted(
                (cell[0], cell[1][1].split("_", 2)[2], cell[2]) for cell in heatmap.get("data", [])
            ),
            "trend_of": names.get(first_target, "").split("_", 2)[-1],
        }
    print(json.dumps(answers))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

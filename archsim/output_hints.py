"""What a command prints or writes that its library function hands back as an object instead: the hint a refused
keyword carries (``archsim.cost(format="json")``: the result's ``to_frame()``), read by
:func:`archsim.api_keywords.check_keywords`. Text only; imports nothing."""

from __future__ import annotations


def command_outputs(what: str) -> dict[str, str]:
    """What a command prints or writes and its function hands back as an object instead: each output flag's keyword
    with the way to that output from the result (``archsim.cost(format="json")``, ``archsim.schedule(gantt=…)`` were
    told only "unknown keyword"; train's and search's own words, :func:`~archsim.training.job_settings.elsewhere`,
    come first); for ``archsim.pipeline`` (``what`` "pipeline with method=…") also what ``archsim pipeline`` runs
    after the plan: its simulation (``--microbatches``, ``--schedule``, ``--link-bandwidth``) and its memory (``--memory``)."""
    printed = ("is how the command prints: the function returns the result it prints from, whose to_frame() is its "
               "rows (to_dict(), where it has one, the --format json document)")
    timeline = "the result's .timeline (a plan's: archsim.simulate(plan, profile, microbatches=M))"
    return {"format": printed, "precision": printed, "out": printed,
            "gantt": f"is the command's output: archsim.report.gantt.write_gantt(TIMELINE, PATH) writes it from "
                     f"{timeline}",
            "chrome_trace": f"is the command's output: archsim.report.export.write_chrome_trace(TIMELINE, PATH) writes "
                            f"it from {timeline}",
            "schedule_csv": f"is the command's output: archsim.report.export.write_pipeline_schedule_csv(TIMELINE, "
                            f"PATH) writes it from {timeline}",
            "dfg": "is the command's output: archsim.pipeline_dfg(plan, profile, out=PATH) writes it",
            **({} if what != "archsim.run_sweep" else {  # archsim sweep's flags that are other functions' jobs
                "report": "is the command's output: archsim.write_report(RESULTS, spec=SPEC) draws it from the "
                          "results folder run_sweep filled (its out, default results/<spec name>)",
                "quiet": "is the command's: run_sweep draws no progress bar unless progress=True",
                "cache_info": "is archsim.sweep_cache(spec, out=…)'s job: it runs nothing",
                "prune_cache": "is archsim.sweep_cache(spec, out=…, prune=True)'s job: it runs nothing"}),
            **({} if not what.startswith("pipeline") else {  # archsim pipeline's costing flags: the profile's
                name: f"is archsim.profile's: the profile the plan partitions is priced there "
                      f"(archsim.profile(network, {name}=…)), and archsim.pipeline takes it as it is"
                for name in ("array", "config", "dataflow", "dtype", "element_bytes", "engine", "sram_kb", "clock_ghz",
                             "batch", "mode", "geometry", "only", "shapes", "unsupported", "input_shape", "dim")}),
            **({} if not what.startswith("pipeline") else {  # --bandwidth is DRAM words/cycle, not a link: said so
                "bandwidth": "is archsim pipeline's --bandwidth, DRAM words per cycle priced into the profile "
                             "(archsim.profile(network, engine='cycle', bandwidth=…)); the link between stages is "
                             "link_bandwidth=… of archsim.simulate (a plan made for that link: processors=archsim.spp."
                             "topology.Topology.flat(P, BYTES))"}),
            **({} if not what.startswith("pipeline") else {
                name: f"is archsim pipeline's run of the plan: archsim.{job}(plan, profile, microbatches=M{extra}) {does}"
                for name, job, extra, does in (
                    ("microbatches", "simulate", "", "simulates it"),
                    ("schedule", "simulate", ", schedule=…", "simulates it"),
                    ("link_bandwidth", "simulate", ", link_bandwidth=…", "simulates it"),
                    ("memory", "pipeline_memory", "", "gives its memory per processor"),
                    ("optimizer", "pipeline_memory", ", optimizer=…", "gives its memory per processor"),
                    ("capacity_gb", "pipeline_memory", ", capacity_gb=…", "gives its memory per processor"))})}


__all__ = ["command_outputs"]

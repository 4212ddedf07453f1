"""Screens of the app: the TrainJob picker and the views of one diagnosis."""

# The screens a number key opens: key, name (for `goto`), label, what it is for. The key
# bindings, the navigation bar, the help and the command palette are all made from this table.
SCREENS = (
    ("0", "picker", "TrainJobs", "pick one: state, age, restarts, verdict"),
    ("1", "overview", "Overview", "verdict (symptom → cause → fix), objects by health"),
    ("2", "findings", "Findings", "failed, not evaluated (why), passed; evidence jumps"),
    ("3", "timeline", "Timeline", "step over time per attempt: rewinds, saves, stops"),
    ("4", "logs", "Logs", "per pod/container, current or previous"),
    ("5", "events", "Events", "newest first; w: warnings only"),
)

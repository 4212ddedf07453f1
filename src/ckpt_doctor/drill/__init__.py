"""The verify drill: interrupt a TrainJob on purpose and check that it resumes from its checkpoint.

- `playbook`: the steps as data (playbooks/verify-resume.yaml), loaded and checked;
- `runner`: the state machine that runs them, asks before each change, waits, records;
- `steps`: what each step does; `cleanup`: how every change is undone, from the marks on the cluster;
- `actions`: the cluster verbs, their kubectl equivalents, and the guard on the blast radius;
- `marks`: the annotations the drill leaves on what it changes; `verify`: reading results through the engine;
- `console`: where the runner talks (the terminal here, the app in tui/screens/drill.py);
- `result`, `report`: the record of a drill and its JSON, JUnit and Markdown forms.
"""

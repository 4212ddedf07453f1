"""The Textual app (`ckpt-doctor tui`): a face over the same engine as the CLI.

Nothing here is imported by the engine. The app module itself imports only Textual: the engine
(networkx, ruamel.yaml) loads in a worker thread after the first frame, and the kubernetes client
only when the live source is first used.
"""

"""Where Snapshots come from: bundles, manifests, the live cluster."""

"""`make bench`: measured figures beside same-run baselines."""

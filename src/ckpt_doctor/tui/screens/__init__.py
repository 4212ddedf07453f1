"""Screens of the app: the TrainJob picker and the views of one diagnosis."""

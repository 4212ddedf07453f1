"""ckpt-doctor: why did this TrainJob not resume from its checkpoint?"""

__version__ = "0.1.0"

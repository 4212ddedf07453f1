import os

# a crash inside a check must fail the test, not turn into a not_evaluated finding
os.environ["CKPT_DOCTOR_DEBUG"] = "1"

"""Launchers and trainer CLIs recognised as "the command that starts training", with no framework
model behind them (yet): Horovod, ColossalAI, Axolotl, ms-swift, XTuner, LitGPT.

Adding one of them as a framework means giving it its own module and removing it here.
"""

from ckpt_doctor.frameworks.spec import Framework, Launch, Tool

FRAMEWORK = Framework(
    name="other-launchers",
    title="other launchers",
    order=220,
    stack=False,
    launch=Launch(
        tools=(
            Tool("horovodrun", role="launcher"),
            # `colossalai run` is recognised as training; its program is not read past `run` (as before)
            Tool("colossalai", frozenset({"run"}), role="launcher"),
            Tool("axolotl", frozenset({"train"})),
            Tool("swift", frozenset({"sft", "pt", "rlhf"})),
            Tool("xtuner", frozenset({"train"})),
            Tool("litgpt", frozenset({"finetune", "pretrain", "finetune_full", "finetune_lora"})),
        ),
    ),
)

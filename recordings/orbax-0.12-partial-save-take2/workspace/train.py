"""Train a small LM with JAX + optax; Orbax CheckpointManager saves every 10 steps into CKPT_DIR and the
run resumes from its latest_step() on start."""

import os

import jax
import jax.numpy as jnp
import optax
import orbax.checkpoint as ocp

CKPT_DIR = os.environ.get("CKPT_DIR", "/mnt/checkpoints/run")
MAX_STEPS = int(os.environ.get("MAX_STEPS", "40"))


def init_params(key, vocab=128, dim=32):
    k1, k2 = jax.random.split(key)
    return {"emb": jax.random.normal(k1, (vocab, dim)) * 0.02, "head": jax.random.normal(k2, (dim, vocab)) * 0.02}


def loss_fn(params, x):
    logits = jnp.tanh(params["emb"][x[:, :-1]]) @ params["head"]
    return optax.softmax_cross_entropy_with_integer_labels(logits, x[:, 1:]).mean()


optimizer = optax.adam(1e-3)


@jax.jit
def train_step(params, opt_state, x):
    loss, grads = jax.value_and_grad(loss_fn)(params, x)
    updates, opt_state = optimizer.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state, loss


def main():
    params = init_params(jax.random.PRNGKey(0))
    opt_state = optimizer.init(params)
    manager = ocp.CheckpointManager(
        os.path.abspath(CKPT_DIR), options=ocp.CheckpointManagerOptions(save_interval_steps=10, max_to_keep=3)
    )
    step = 0
    latest = manager.latest_step()
    if latest is not None:
        state = manager.restore(latest, args=ocp.args.StandardRestore({"params": params, "opt_state": opt_state}))
        params, opt_state, step = state["params"], state["opt_state"], latest
        print(f"Restored checkpoint from step {step}")
    else:
        print("No checkpoint found, starting from step 0")
    data = jax.random.randint(jax.random.PRNGKey(1), (2000, 32), 0, 128)
    while step < MAX_STEPS:
        i = (step * 8) % 2000
        params, opt_state, loss = train_step(params, opt_state, data[i : i + 8])
        step += 1
        if step % 5 == 0:
            print(f"step {step}: loss {float(loss):.4f}")
        manager.save(step, args=ocp.args.StandardSave({"params": params, "opt_state": opt_state}))
    manager.wait_until_finished()
    print("done")


if __name__ == "__main__":
    main()

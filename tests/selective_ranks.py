"""One rank of `test_selective_grpo.test_two_processes_add_up_to_the_one_batch_step`, run under
`accelerate launch --num_processes 2` (gloo on the CPU): each rank holds half of the hand-made batch, the
selection is decided on the rewards of both, and the ranks' gradients are averaged as DDP averages them.

    python -m accelerate.commands.launch --num_processes 2 tests/selective_ranks.py MODEL POOL OUT MODE
"""

import os
import sys
from pathlib import Path

import pandas as pd
import torch
import torch.distributed as dist

sys.path.insert(0, str(Path(__file__).parent))

from test_selective_grpo import REWARDS, SELECTIONS, hand_batch, trainer  # noqa: E402

model, pool_path, out, mode = sys.argv[1:5]
torch.set_num_threads(1)
pool = pd.read_parquet(pool_path)
selection, point = SELECTIONS[mode]
built = trainer(model, pool, Path(out).parent / f"rank{os.environ['RANK']}", selection, point=point, processes=2)
rank, ranks = built.accelerator.process_index, built.accelerator.num_processes
assert ranks == 2 and built.args.per_device_train_batch_size == 4
batch = hand_batch(built, pool)
mine = {key: value[4 * rank : 4 * rank + 4] if value.ndim else value for key, value in batch.items()}
loss = built._compute_loss(built.model, {**mine, **built.select(REWARDS, mine)})
loss.backward()
for parameter in built.model.parameters():
    dist.all_reduce(parameter.grad)
    parameter.grad /= ranks
total = loss.detach().clone()
dist.all_reduce(total)
if rank == 0:
    torch.save({"loss": total / ranks, "grads": [p.grad for p in built.model.parameters()]}, out)

"""The pacs advantage estimator: hand-computed signed class weights, rows in shuffled uid order."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from omegaconf import OmegaConf

from pacs.verl_plugin.advantage import compute_pacs_advantage, signed_class_weights

# Three prompts of n = 4, listed group by group:
#   a: rewards 1 0 0 0 -> mixed, 1 positive: w+ = 4/(2·1) = 2,   w- = 4/(2·3) = 2/3
#   b: rewards 1 1 1 1 -> single label:        w = 1
#   c: rewards 0 1 1 1 -> mixed, 3 positives: w+ = 4/(2·3) = 2/3, w- = 4/(2·1) = 2
UIDS = ["a"] * 4 + ["b"] * 4 + ["c"] * 4
REWARDS = [1, 0, 0, 0, 1, 1, 1, 1, 0, 1, 1, 1]
SIGNED = [2, -2 / 3, -2 / 3, -2 / 3, 1, 1, 1, 1, -2, 2 / 3, 2 / 3, 2 / 3]
PERM = [7, 2, 11, 0, 5, 9, 3, 10, 1, 6, 8, 4]  # the driver's batch is not ordered by group


def _shuffled(values):
    return [values[i] for i in PERM]


def test_signed_weights_by_hand_with_shuffled_uids():
    got = signed_class_weights(
        torch.tensor(_shuffled(REWARDS), dtype=torch.float32), _shuffled(UIDS)
    )
    assert torch.allclose(got, torch.tensor(_shuffled(SIGNED), dtype=torch.float32), atol=1e-6)


def test_without_weights_only_the_sign_remains():
    got = signed_class_weights(
        torch.tensor(_shuffled(REWARDS), dtype=torch.float32), _shuffled(UIDS), use_weight=False
    )
    assert got.tolist() == [1.0 if r == 1 else -1.0 for r in _shuffled(REWARDS)]


def test_unequal_group_sizes_use_their_own_n():
    # group "x" has 3 responses (1 1 0): w+ = 3/(2·2) = 0.75, w- = 3/(2·1) = 1.5
    got = signed_class_weights(torch.tensor([1.0, 0.0, 1.0]), ["x", "x", "x"])
    assert torch.allclose(got, torch.tensor([0.75, -1.5, 0.75]))


def test_soft_rewards_are_refused():
    with pytest.raises(ValueError, match="0/1"):
        signed_class_weights(torch.tensor([0.5, 1.0]), ["a", "a"])


def _verl_batch(use_weight: bool):
    """A DataProto as verl's v1 trainer builds it in _compute_advantage (outcome reward on the
    last valid token, uid per row), shuffled."""
    from verl.protocol import DataProto

    b, t = len(REWARDS), 5
    lengths = torch.tensor(_shuffled([5, 3, 1, 4, 2, 5, 5, 1, 3, 2, 4, 5]))
    mask = (torch.arange(t)[None, :] < lengths[:, None]).float()
    token_rewards = torch.zeros(b, t)
    token_rewards[torch.arange(b), lengths - 1] = torch.tensor(
        _shuffled(REWARDS), dtype=torch.float32
    )
    data = DataProto.from_dict(
        tensors={"token_level_rewards": token_rewards, "response_mask": mask},
        non_tensors={"uid": np.array(_shuffled(UIDS), dtype=object)},
    )
    config = OmegaConf.create({"adv_estimator": "pacs", "label_loss": {"use_weight": use_weight}})
    return data, mask, config


@pytest.mark.parametrize("use_weight", [True, False])
def test_through_verls_v1_advantage_path(use_weight):
    """verl.trainer.ppo.v1.utils.compute_advantage_for_multi_trajectories -> our estimator."""
    import verl  # noqa: F401  (loads the plugin through its entry point)
    from verl.trainer.ppo.v1.utils import compute_advantage_for_multi_trajectories

    data, mask, config = _verl_batch(use_weight)
    keys = [f"{uid}_{i}_0" for i, uid in enumerate(_shuffled(UIDS))]
    out = compute_advantage_for_multi_trajectories(
        data, batch_keys=keys, adv_estimator="pacs", num_repeat=4, config=config
    )
    signed = (
        _shuffled(SIGNED) if use_weight else [1.0 if r == 1 else -1.0 for r in _shuffled(REWARDS)]
    )
    expected = torch.tensor(signed, dtype=torch.float32)[:, None] * mask
    assert torch.allclose(out.batch["advantages"], expected, atol=1e-6)


def test_missing_uids_are_refused():
    with pytest.raises(ValueError, match="uid"):
        compute_pacs_advantage(torch.zeros(2, 3), torch.ones(2, 3), index=None)


def test_use_weight_must_be_a_bool():
    with pytest.raises(TypeError, match="use_weight"):
        compute_pacs_advantage(
            torch.zeros(2, 3),
            torch.ones(2, 3),
            index=["a", "a"],
            config={"label_loss": {"use_weight": "no"}},
        )

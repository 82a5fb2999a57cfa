"""A CPU platform and a Hugging Face ``generate`` rollout for verl 0.9.1's v1 trainer.

verl 0.9.1 ships platforms for CUDA, ROCm and NPU only, registers its FSDP engines for cuda/npu,
and its v1 trainer generates through a rollout *server* (vLLM, SGLang or TRT-LLM). To run the
real trainer (``PACSTrainerSync``: worker groups, rollout, rewards, the PACS loss, optimizer,
checkpoints) on a CPU, ``pacs.verl_plugin.cpu_platform`` registers platform ``cpu`` and this
module registers, through verl's own registries:

- verl's own ``FSDPEngineWithLMHead`` for device ``cpu`` (``EngineRegistry``: FSDP2 works on
  CPU tensors with a gloo process group);
- rollout ``hf`` (``RolloutReplicaRegistry`` and verl's rollout-adapter table): one
  ``HFServer`` Ray actor per replica that samples with ``transformers`` ``generate``, and an
  ``HFServerAdapter`` in each training worker that pushes the actor's weights into its server
  after every update (verl's "naive" colocated weight sync).

``register()`` runs when this module is imported, which ``pacs.verl_plugin.register`` does on every
``import verl`` (driver and Ray workers); it is idempotent. Nothing here changes verl's files or
objects other than adding these registry entries.
"""

from __future__ import annotations

import asyncio
import logging
import os
from typing import Any

import ray
import torch
from verl.utils import normalize_token_ids
from verl.utils.config import omega_conf_to_dataclass
from verl.workers.engine.base import EngineRegistry
from verl.workers.engine.fsdp.transformer_impl import FSDPEngineWithLMHead
from verl.workers.rollout import base as rollout_base
from verl.workers.rollout.base import BaseRollout
from verl.workers.rollout.replica import RolloutReplica, RolloutReplicaRegistry, TokenOutput

logger = logging.getLogger(__name__)

ROLLOUT_NAME = "hf"
SERVER_NAME_PREFIX = "hf_server_"
ADAPTER_FQN = "pacs.verl_plugin.hf_rollout.HFServerAdapter"


# ------------------------------------------------------------------------------ HF server


def _sampling_kwargs(sampling_params: dict[str, Any]) -> dict[str, Any]:
    """vLLM-style sampling params -> ``generate`` kwargs (top_k -1/0 and top_p 1 disable)."""
    temperature = float(sampling_params.get("temperature", 1.0))
    if temperature <= 0:
        return {"do_sample": False}
    top_k = int(sampling_params.get("top_k", -1) or -1)
    return {
        "do_sample": True,
        "temperature": temperature,
        "top_p": float(sampling_params.get("top_p", 1.0)),
        "top_k": max(0, top_k),
    }


class HFServer:
    """One rollout replica: a ``transformers`` causal LM sampling one request at a time.

    Token-in/token-out like verl's vLLM server (``generate`` returns a ``TokenOutput``); the
    weights come from the actor through ``load_weights`` after every update.
    """

    def __init__(self, config, model_config, replica_rank: int = 0):
        from pacs.progress import load_causal_lm

        torch.set_num_threads(int(os.environ.get("PACS_HF_ROLLOUT_THREADS", "1")))
        self.config = omega_conf_to_dataclass(config)
        self.model_config = omega_conf_to_dataclass(model_config)
        self.replica_rank = replica_rank
        path = self.model_config.local_path
        self.model = load_causal_lm(path, dtype=torch.float32).eval()
        self.eos_token_id = self.model.generation_config.eos_token_id
        self.pad_token_id = self.model.generation_config.pad_token_id
        if self.pad_token_id is None:
            self.pad_token_id = self.eos_token_id
        self.generator_seed = int(self.config.seed) + replica_rank
        torch.manual_seed(self.generator_seed)
        self.global_steps: int | None = None
        self._lock = asyncio.Lock()

    async def ready(self) -> str:
        return f"{SERVER_NAME_PREFIX}{self.replica_rank}"

    async def load_weights(self, state_dict: dict[str, torch.Tensor]) -> int:
        """Copy the actor's full (unsharded) weights in; return how many tensors were loaded."""
        async with self._lock:
            own = self.model.state_dict()
            unknown = sorted(set(state_dict) - set(own))
            if unknown:
                raise KeyError(f"weights not in the rollout model: {unknown[:5]}")
            missing = [
                k for k in own if k not in state_dict and not self._tied(k)
            ]  # tied lm_head comes as embed_tokens only
            if missing:
                raise KeyError(f"the actor sent no weights for {missing[:5]}")
            with torch.no_grad():
                for name, tensor in state_dict.items():
                    own[name].copy_(tensor)
            return len(state_dict)

    def _tied(self, name: str) -> bool:
        return name == "lm_head.weight" and bool(
            getattr(self.model.config, "tie_word_embeddings", False)
        )

    async def set_global_steps(self, global_steps: int) -> None:
        self.global_steps = global_steps

    async def generate(
        self,
        prompt_ids: list[int],
        sampling_params: dict[str, Any],
        request_id: str,
        **_unused: Any,
    ):
        prompt_ids = normalize_token_ids(prompt_ids)
        sampling_params = dict(sampling_params)
        budget = self.config.prompt_length + self.config.response_length - len(prompt_ids)
        max_tokens = sampling_params.pop("max_tokens", None) or sampling_params.pop(
            "max_new_tokens", None
        )
        max_tokens = min(max_tokens or self.config.response_length, self.config.response_length)
        max_tokens = max(1, min(max_tokens, budget))
        want_logprobs = bool(sampling_params.get("logprobs", False))
        async with self._lock:
            token_ids, log_probs = self._sample(prompt_ids, sampling_params, max_tokens)
        return TokenOutput(
            token_ids=token_ids,
            log_probs=log_probs if want_logprobs else None,
            stop_reason="completed",
            extra_fields={"global_steps": self.global_steps},
        )

    @torch.no_grad()
    def _sample(self, prompt_ids: list[int], sampling_params: dict, max_tokens: int):
        kwargs = _sampling_kwargs(sampling_params)
        input_ids = torch.tensor([prompt_ids], dtype=torch.long)
        out = self.model.generate(
            input_ids=input_ids,
            attention_mask=torch.ones_like(input_ids),
            max_new_tokens=max_tokens,
            eos_token_id=self.eos_token_id,
            pad_token_id=self.pad_token_id,
            return_dict_in_generate=True,
            output_logits=True,
            **kwargs,
        )
        new = out.sequences[0, len(prompt_ids) :].tolist()
        eos = self.eos_token_id if isinstance(self.eos_token_id, list) else [self.eos_token_id]
        end = next((i + 1 for i, t in enumerate(new) if t in eos), len(new))
        new = new[:end]  # keep the eos token (as vLLM does), drop padding after it
        temperature = kwargs.get("temperature", 1.0)
        log_probs = [
            torch.log_softmax(out.logits[i][0].float() / temperature, dim=-1)[tok].item()
            for i, tok in enumerate(new)
        ]
        return new, log_probs

    # Lifecycle calls verl makes on every server; nothing to free or pause on a CPU.
    async def wake_up(self, tags: list[str] | None = None) -> None:
        return None

    async def sleep(self) -> None:
        return None

    async def clear_kv_cache(self) -> None:
        return None

    async def release_kv_cache(self) -> None:
        return None

    async def resume_kv_cache(self) -> None:
        return None

    async def abort_all_requests(self, **_kwargs) -> dict:
        return {}

    async def resume_generation(self) -> None:
        return None

    async def start_profile(self, **_kwargs) -> None:
        return None

    async def stop_profile(self) -> None:
        return None


def server_actor_name(replica_rank: int) -> str:
    return f"{SERVER_NAME_PREFIX}{replica_rank}"


# ------------------------------------------------------------------------------ adapter + replica


class HFServerAdapter(BaseRollout):
    """Lives in each training worker; pushes the actor's weights into its replica's server."""

    def __init__(self, config, model_config, device_mesh, replica_rank: int = -1, **_):
        super().__init__(config, model_config, device_mesh)
        rank = int(os.environ.get("RANK", "0"))
        world = self.config.tensor_model_parallel_size * self.config.data_parallel_size
        world *= self.config.pipeline_model_parallel_size
        self.replica_rank = rank // world if replica_rank == -1 else replica_rank
        self.is_leader_rank = rank % world == 0
        self.server_handle = None

    def _server(self):
        if self.server_handle is None:
            self.server_handle = ray.get_actor(server_actor_name(self.replica_rank))
        return self.server_handle

    async def resume(self, tags: list[str]):
        return None

    async def release(self):
        return None

    @torch.no_grad()
    async def update_weights(self, weights, wire_format: str = "named_tensors", **kwargs):
        if wire_format != "named_tensors":
            raise NotImplementedError(f"hf rollout takes full tensors, not {wire_format!r}")
        # Every rank must drain the generator: producing a full tensor is a collective.
        state = {name: tensor.detach().to("cpu", copy=True) for name, tensor in weights}
        if not self.is_leader_rank:
            return
        await self._server().load_weights.remote(state)
        if kwargs.get("global_steps") is not None:
            await self._server().set_global_steps.remote(kwargs["global_steps"])


class HFReplica(RolloutReplica):
    """One ``HFServer`` actor per replica (hybrid mode: the training workers hold the adapter)."""

    async def launch_servers(self):
        name = server_actor_name(self.replica_rank) + self.name_suffix
        server = (
            ray.remote(HFServer)
            .options(name=name, num_cpus=1, max_concurrency=self.max_concurrency)
            .remote(
                config=self.config, model_config=self.model_config, replica_rank=self.replica_rank
            )
        )
        await server.ready.remote()
        self.servers = [server]
        self._server_handle = server
        self._server_address = name  # no HTTP endpoint: requests go through the handle

    def rollout_worker_use_gpu(self) -> bool:
        return False


# ------------------------------------------------------------------------------ registration

_registered: dict[str, Any] = {}


def register() -> None:
    """Add verl's FSDP engine for device ``cpu`` and rollout ``hf`` to verl's registries (the
    ``cpu`` platform itself is registered earlier, by ``cpu_platform``)."""
    if _registered:
        return
    engines = EngineRegistry._engines.get("language_model", {})
    if "cpu" not in engines.get("fsdp2", {}):
        EngineRegistry.register("language_model", ["fsdp", "fsdp2"], device="cpu")(
            FSDPEngineWithLMHead
        )
    RolloutReplicaRegistry.register(ROLLOUT_NAME, lambda: HFReplica)
    # verl's adapter table (workers/rollout/base.py) has no register function; it maps
    # (name, mode) to a class path that get_rollout_class imports.
    rollout_base._ROLLOUT_REGISTRY[(ROLLOUT_NAME, "async")] = ADAPTER_FQN
    _registered.update(replica=HFReplica)


# Registered on import: a Ray worker that unpickles HFServer imports this module first, and verl's
# plugin loading (pacs.verl_plugin.register) then sees it only partially initialised.
register()

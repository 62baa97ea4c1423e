"""The types of vLLM's tiered KV offloading that pool.vllm uses, as vLLM
defines them (vllm/v1/kv_offload/base.py and tiering/base.py at 7cfb97e3),
for where vLLM is not installed: pool.vllm takes vLLM's own when it can
import them, so a tier vLLM loads is one of its SecondaryTierManagers, and
these are what a test without vLLM drives it with."""
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from enum import Enum, auto
from typing import Any, ClassVar, Collection, NamedTuple, Optional


class Medium(Enum):
    CPU = "CPU"
    STORAGE = "STORAGE"


class Locality(Enum):
    LOCAL = "LOCAL"
    REMOTE = "REMOTE"


class LookupResult(Enum):
    MISS = auto()
    HIT = auto()
    HIT_PENDING = auto()
    RETRY = auto()


class OffloadPolicy(Enum):
    BLOCK_LEVEL = "block_level"
    REQUEST_LEVEL = "request_level"


@dataclass
class ReqContext:
    req_id: str
    kv_transfer_params: Optional[dict] = None
    _state: dict = field(default_factory=dict, repr=False, init=False)


@dataclass
class RequestOffloadingContext:
    policy: OffloadPolicy = OffloadPolicy.BLOCK_LEVEL


class ScheduleEndContext(NamedTuple):
    new_req_ids: Collection[str]
    preempted_req_ids: Collection[str]


@dataclass
class OffloadingEvent:
    keys: list
    medium: Medium
    removed: bool
    locality: Optional[Locality] = None


@dataclass
class TransferJob:
    job_id: int
    keys: Collection[bytes]
    block_ids: Any  # np.ndarray of int64 in vLLM; lists in its tests
    is_promotion: bool
    req_context: ReqContext


@dataclass
class JobResult:
    job_id: int
    success: bool
    successful_keys: Optional[Collection[bytes]] = None
    transfer_time: Optional[float] = None


class SecondaryTierManager(ABC):
    medium: ClassVar[Optional[Medium]] = None

    def __init__(self, offloading_spec, primary_kv_view: memoryview, tier_type: str):
        self._offloading_spec = offloading_spec
        self._primary_kv_view = primary_kv_view
        self.tier_type = tier_type
        self.locality: Optional[Locality] = None

    @abstractmethod
    def lookup(self, key, req_context) -> LookupResult: ...

    @abstractmethod
    def submit_store(self, job: TransferJob) -> None: ...

    @abstractmethod
    def submit_load(self, job: TransferJob) -> None: ...

    @abstractmethod
    def get_finished_jobs(self): ...

    def has_pending_work(self) -> bool:
        return False

    def take_events(self):
        return ()

    def touch(self, keys, req_context) -> None:
        pass

    @abstractmethod
    def on_new_request(self, req_context) -> RequestOffloadingContext: ...

    def on_request_finished(self, req_context) -> None:
        pass

    def on_schedule_end(self, context) -> None:
        pass

    @abstractmethod
    def drain_jobs(self) -> None: ...

    def shutdown(self) -> None:
        pass

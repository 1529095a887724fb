"""Long-conversation token economics: registered arms driven turn by turn, against append.

Each configured arm (``seed_systems.conversation.arms``) is driven the way an agent
drives its memory: every turn is written through :meth:`~agentmem.arms.base.Arm.remember`
and the next turn's context is recalled through :meth:`~agentmem.arms.base.Arm.query` (or
assembled by the arm itself); the baseline appends the whole history. The sweep measures
the seed's claims (docs/STUDY.md §5): cumulative tokens against append, the per-turn context
cap and long-range recall. Conversations, probes, strategies and measures are described
in ``docs/experiments/conversation.md``.

The arms that assemble their own context implement
:class:`agentmem.arms.context.ContextAssembler`. Submodules: :mod:`.records`
(conversations, probe questions, probes), :mod:`.stream` (memory streams), :mod:`.probes`
(which questions probe, and when),
:mod:`.strategies` (append and arms), :mod:`.run` (the sweep and its CSVs),
:mod:`.summary` (per strategy and per tier), :mod:`.schemas` (table columns).
"""

from agentmem.sweeps.conversation.probes import PROBE_CLASSES, probe_questions
from agentmem.sweeps.conversation.records import Conversation, Probe, ProbeQuestion
from agentmem.sweeps.conversation.run import (
    ConversationRun,
    conversation_sweep,
    run_conversations,
    write_conversation_sweep,
)
from agentmem.sweeps.conversation.schemas import (
    CONVERSATION_SCHEMA,
    PROBE_SCHEMA,
    SUMMARY_SCHEMA,
    TIER_SCHEMA,
    TIER_SUMMARY_SCHEMA,
)
from agentmem.sweeps.conversation.strategies import (
    APPEND,
    SWEEP_ARM_PARAMS,
    make_conversation_arm,
)
from agentmem.sweeps.conversation.stream import SAMPLINGS, remember_frame
from agentmem.sweeps.conversation.summary import (
    SEED_CLAIMS,
    summarise_conversation,
    summarise_tiers,
)

__all__ = [
    "APPEND",
    "CONVERSATION_SCHEMA",
    "PROBE_CLASSES",
    "PROBE_SCHEMA",
    "SAMPLINGS",
    "SEED_CLAIMS",
    "SUMMARY_SCHEMA",
    "SWEEP_ARM_PARAMS",
    "TIER_SCHEMA",
    "TIER_SUMMARY_SCHEMA",
    "Conversation",
    "ConversationRun",
    "Probe",
    "ProbeQuestion",
    "conversation_sweep",
    "make_conversation_arm",
    "probe_questions",
    "remember_frame",
    "run_conversations",
    "summarise_conversation",
    "summarise_tiers",
    "write_conversation_sweep",
]

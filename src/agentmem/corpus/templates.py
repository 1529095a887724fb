"""Surface forms for the synthetic world (our own templates, not the study's).

Every fact type has identifier-bearing forms (they carry the record's identifier and the
service identifier) and paraphrase forms (they name the service by its descriptive name and
restate the value in words, sharing no identifier and no value token with the
identifier-bearing forms). Questions are written per query class (REFERENCE §2).

Placeholders: ``{rid}`` record identifier, ``{sid}`` service identifier, ``{svc}`` service
descriptive name, ``{v}`` value (identifier form), ``{vp}`` value paraphrase, ``{name}`` a
person's name, ``{new_rid}`` a second person for ownership corrections.
"""

from __future__ import annotations

# --- world vocabulary -----------------------------------------------------------------

SERVICE_ADJECTIVES = (
    "amber azure cobalt coral crimson golden granite ivory jade lunar maple marble midnight "
    "olive onyx pearl polar quartz ruby saffron scarlet silver slate solar teal tidal topaz "
    "umber velvet violet willow winter arctic copper ember"
).split()
SERVICE_NOUNS = (
    "ledger billing checkout catalog search inventory payments identity shipping pricing "
    "invoice loyalty messaging notification reporting analytics scheduler recommendation "
    "media profile session onboarding audit fraud tax refund subscription warehouse routing"
).split()
SERVICE_ROLES = "gateway worker api indexer cache pipeline broker frontend daemon store".split()

FIRST_NAMES = (
    "Ada Bruno Chiara Dmitri Elena Farid Greta Hiro Ines Jonas Kemal Leila Marta Nils Omar "
    "Priya Quentin Rosa Sven Tamar Ugo Vera Wen Ximena Yusuf Zofia Amara Bilal Cyra Dario "
    "Esme Felix Gia Hamid Ilse Joel Kira Lorenzo Mina Noor"
).split()
LAST_NAMES = (
    "Abara Berger Castillo Dahl Eklund Ferreira Grunwald Haddad Ishikawa Jovanovic Kowalski "
    "Lindqvist Moreau Nakamura Okafor Petrov Quispe Rinaldi Sato Tanaka Urquhart Varga "
    "Weiss Xu Yilmaz Zhou Adeyemi Brandt Cortez Duarte Engel Fontaine Gallo Horvat Iversen "
    "Jensen Kaur Lopez Mbeki Novak"
).split()

# --- config records (CFG) -------------------------------------------------------------
# attribute -> (values [(id form, paraphrase)], paraphrase statements, semantic question,
#               currency phrase)
CONFIG_ATTRIBUTES: dict[str, dict] = {
    "request timeout": {
        "values": [
            ("30s", "half a minute"),
            ("5s", "five seconds"),
            ("60s", "a full minute"),
            ("120s", "two minutes"),
            ("10s", "ten seconds"),
            ("90s", "ninety seconds"),
        ],
        "para": [
            "The {svc} gives up on a request after {vp}.",
            "Calls into the {svc} are abandoned once {vp} has passed without an answer.",
        ],
        "question": "How long does the {svc} wait on a call before it gives up?",
    },
    "retry limit": {
        "values": [
            ("3", "three attempts"),
            ("5", "five attempts"),
            ("0", "no second attempt"),
            ("10", "ten attempts"),
            ("1", "a single extra attempt"),
        ],
        "para": [
            "When a call fails, the {svc} tries again up to {vp}.",
            "The {svc} is allowed {vp} before it reports a failure.",
        ],
        "question": "How many times will the {svc} try again after a failed call?",
    },
    "connection pool size": {
        "values": [
            ("20", "twenty connections"),
            ("50", "fifty connections"),
            ("100", "a hundred connections"),
            ("8", "eight connections"),
        ],
        "para": [
            "The {svc} keeps {vp} open to its database at most.",
            "At most {vp} to the database are held by the {svc}.",
        ],
        "question": "How many database connections can the {svc} hold open?",
    },
    "cache TTL": {
        "values": [
            ("300s", "five minutes"),
            ("3600s", "one hour"),
            ("86400s", "a whole day"),
            ("60s", "one minute"),
        ],
        "para": [
            "Cached answers in the {svc} stay fresh for {vp}.",
            "The {svc} throws away a cached entry after {vp}.",
        ],
        "question": "How long do cached entries live in the {svc} before they expire?",
    },
    "batch size": {
        "values": [
            ("500", "five hundred items"),
            ("1000", "a thousand items"),
            ("64", "sixty-four items"),
            ("250", "two hundred and fifty items"),
        ],
        "para": [
            "The {svc} processes work in chunks of {vp}.",
            "Each chunk the {svc} handles holds {vp}.",
        ],
        "question": "How big are the chunks of work the {svc} processes at once?",
    },
    "log level": {
        "values": [
            ("DEBUG", "every debugging detail"),
            ("WARN", "only warnings and worse"),
            ("ERROR", "nothing but errors"),
            ("INFO", "routine informational lines"),
        ],
        "para": [
            "The {svc} writes {vp} to its logs.",
            "Logging in the {svc} is set to record {vp}.",
        ],
        "question": "How much detail does the {svc} write to its logs?",
    },
    "replica count": {
        "values": [
            ("3", "three copies"),
            ("5", "five copies"),
            ("2", "two copies"),
            ("7", "seven copies"),
        ],
        "para": [
            "The {svc} runs as {vp} side by side.",
            "We keep {vp} of the {svc} running at all times.",
        ],
        "question": "How many copies of the {svc} do we keep running?",
    },
    "rate limit": {
        "values": [
            ("100/s", "a hundred requests each second"),
            ("1000/s", "a thousand requests each second"),
            ("20/s", "twenty requests each second"),
        ],
        "para": [
            "The {svc} accepts no more than {vp}.",
            "Traffic to the {svc} is throttled at {vp}.",
        ],
        "question": "How much traffic per second will the {svc} accept before throttling?",
    },
    "memory limit": {
        "values": [
            ("512Mi", "half a gigabyte"),
            ("2Gi", "two gigabytes"),
            ("8Gi", "eight gigabytes"),
            ("256Mi", "a quarter of a gigabyte"),
        ],
        "para": [
            "The {svc} may use {vp} of RAM before it is killed.",
            "Each copy of the {svc} is capped at {vp} of memory.",
        ],
        "question": "How much RAM may the {svc} use before it gets killed?",
    },
    "max payload": {
        "values": [
            ("1MB", "one megabyte"),
            ("10MB", "ten megabytes"),
            ("64KB", "sixty-four kilobytes"),
        ],
        "para": [
            "The {svc} refuses bodies larger than {vp}.",
            "Uploads to the {svc} must stay under {vp}.",
        ],
        "question": "What is the largest request body the {svc} will accept?",
    },
}
CONFIG_ID_FORMS = [
    "{rid} sets the {attr} of {sid} to {v}.",
    "Per config record {rid}, {sid} runs with {attr} = {v}.",
    "{rid}: {attr} for {sid} is {v}.",
    "Checked {rid}; {sid} has its {attr} at {v}.",
]
CONFIG_CORRECTION = "Correction: {rid} now sets the {attr} of {sid} to {v} (was {old})."

# --- incidents (INC) ------------------------------------------------------------------
INCIDENT_CAUSES = [
    ("a full disk on the primary volume", "its storage filled up completely"),
    ("an expired TLS certificate", "a security certificate had lapsed"),
    ("a DNS misconfiguration", "name lookups pointed at the wrong place"),
    ("a memory leak in the worker pool", "its workers slowly ate all available memory"),
    ("connection pool exhaustion", "it ran out of database connections"),
    ("clock skew between nodes", "the machines disagreed about what time it was"),
    (
        "a thundering herd after a cache flush",
        "everyone hit the backend at once after the cache was emptied",
    ),
    ("a network partition in zone B", "part of the network got cut off from the rest"),
    ("a runaway cron job", "a scheduled task kept spawning copies of itself"),
    ("a schema migration lock", "a database change held a lock for far too long"),
    ("a rate limiter misfire", "the throttle began rejecting legitimate traffic"),
    ("an upstream API outage", "a provider it depends on went dark"),
    ("a corrupted index file", "a lookup file on disk got mangled"),
    ("file descriptor exhaustion", "it hit the ceiling on open files"),
    ("a misrouted load balancer rule", "traffic was sent to the wrong backend"),
    ("a kernel upgrade regression", "an operating system update broke it"),
    ("a queue backlog overflow", "its work queue overflowed"),
    ("a feature flag misconfiguration", "a toggle was switched on for everyone by mistake"),
    ("a stale config push", "an outdated settings file was rolled out"),
    ("a deadlock in the payment path", "two operations waited on each other forever"),
]
INCIDENT_ID_FORMS = [
    "{rid}: {sid} outage caused by {v}.",
    "Postmortem {rid} found {v} behind the {sid} incident.",
    "{rid} ({sid}) root cause: {v}.",
    "Closed {rid}; the {sid} failure came down to {v}.",
]
INCIDENT_PARA = [
    "The {svc} went down because {vp}.",
    "We lost the {svc} for a while after {vp}.",
]
INCIDENT_QUESTION = "Did the {svc} ever go down because {vp}?"
INCIDENT_CORRECTION = "Correction: {rid} root cause revised to {v} for {sid} (was {old})."

# --- decisions (ADR) ------------------------------------------------------------------
DECISION_CHOICES = [
    ("adopt PostgreSQL for persistence", "keep its data in a relational database"),
    ("move to gRPC", "talk to other services with binary remote calls instead of JSON"),
    ("use event sourcing", "record every change as an immutable event"),
    ("deprecate the v1 API", "retire the first version of its interface"),
    ("shard by tenant", "split its data up by customer"),
    ("adopt OpenTelemetry tracing", "send request traces through a vendor-neutral standard"),
    ("run on ARM instances", "run on cheaper processors to save money"),
    ("enforce mutual TLS", "require both sides of a connection to show certificates"),
    ("cache reads in Redis", "keep frequently read data in an in-memory store"),
    ("switch to blue-green deploys", "release by flipping between two identical environments"),
    ("ship behind feature flags", "hide unfinished changes behind toggles"),
    ("store secrets in Vault", "keep its passwords in a dedicated secrets manager"),
    ("publish events to Kafka", "send its events through a distributed log"),
    ("freeze schema changes on Fridays", "avoid database changes right before weekends"),
    ("require two reviewers", "need two approvals on every change"),
    ("move logs to object storage", "ship its logs to cheap bucket storage"),
    ("rewrite the hot path in Rust", "rewrite its hottest code in a systems language"),
    ("drop Python 2 support", "stop supporting the old interpreter"),
    ("rate limit per API key", "throttle each client credential separately"),
    ("pin dependency versions", "lock every library it uses to an exact release"),
]
DECISION_ID_FORMS = [
    "{rid} decided that {sid} will {v}.",
    "Decision record {rid}: {sid} is to {v}.",
    "{rid} accepted: {v} for {sid}.",
    "Per {rid}, the plan for {sid} is to {v}.",
]
DECISION_PARA = [
    "We agreed the {svc} should {vp}.",
    "The team chose to have the {svc} {vp}.",
]
DECISION_QUESTION = "Did we agree that the {svc} ought to {vp}?"
DECISION_CORRECTION = (
    "Correction: {rid} was amended; the plan for {sid} is now to {v} (was to {old})."
)

# --- people (PER) ---------------------------------------------------------------------
PERSON_ID_FORMS = [
    "{rid} owns {sid}.",
    "{sid} is owned by {rid}.",
    "Ownership: {rid} is on point for {sid}.",
    "Escalations for {sid} go to {rid}.",
]
PERSON_PARA = [
    "{name} is the person responsible for the {svc}.",
    "If the {svc} breaks, {name} is the one to call.",
]
PERSON_QUESTION = "Who should I call when the {svc} breaks?"
PERSON_CORRECTION = "Correction: ownership moved; {rid} handed {sid} over to {new_rid}."

# --- runbooks (RUN) -------------------------------------------------------------------
RUNBOOK_TASKS = [
    ("rotate credentials", "swap out its passwords and keys"),
    ("fail over the database", "switch over to the standby database"),
    ("scale out", "add more capacity"),
    ("roll back a deploy", "undo a bad release"),
    ("clear the cache", "empty its cache"),
    ("restart workers", "bounce its background workers"),
    ("reindex search", "rebuild its search index"),
    ("drain a node", "move traffic off one machine"),
    ("renew certificates", "refresh its security certificates"),
    ("replay dead letters", "reprocess the messages that failed"),
]
RUNBOOK_STEPS = [
    ("page the on-call owner", "let whoever is on call know"),
    ("snapshot the volume", "take a backup copy of the disk"),
    ("drain traffic", "stop sending it new requests"),
    ("freeze deploys", "pause all releases"),
    ("check replication lag", "make sure the copies have caught up"),
    ("open a change ticket", "file a change request"),
    ("scale consumers to zero", "stop everything reading from the queue"),
    ("announce in the status channel", "warn everyone in the status room"),
]
RUNBOOK_ID_FORMS = [
    "{rid}: to {task} on {sid}, first {v}.",
    "Runbook {rid} for {sid} ({task}) starts with: {v}.",
    "{rid} says step one to {task} for {sid} is to {v}.",
]
RUNBOOK_PARA = [
    "Before you {taskp} for the {svc}, {vp}.",
    "Step one when the {svc} needs to {taskp}: {vp}.",
]
RUNBOOK_QUESTION = "What comes first when the {svc} needs to {taskp}?"
RUNBOOK_CORRECTION = (
    "Correction: {rid} now says the first step to {task} on {sid} is to {v} (was to {old})."
)

# --- distractors: mention an identifier, assert nothing about it ------------------------
DISTRACTORS = [
    "Someone asked about {rid} in the team channel this morning, but nobody had an answer "
    "and the thread drifted off to lunch plans before anyone checked.",
    "Saw {rid} mentioned in a ticket title while triaging the queue; there were no details, "
    "no owner, and the reporter had already gone home for the day.",
    "TODO: look into {rid} this week when there is time to read the history, probably after "
    "the quarterly planning meeting wraps up on Thursday afternoon.",
    "{rid} came up in the daily sync; we ran out of time and did not discuss it, so it "
    "went on the parking lot list with everything else nobody reached.",
    "A link to {rid} was shared in a long thread without any context or explanation, "
    "between a meme about coffee and a question about the holiday rota.",
    "Searched the wiki for {rid} and found nothing useful; need to check again tomorrow, "
    "maybe the page moved during the migration to the new documentation site.",
    "Is {rid} still relevant to what we run? Unclear, and nobody remembered, so the "
    "question was left open until someone with more history joins the call.",
    "Bookmarked {rid} for the weekly review meeting so we can go over it together, "
    "assuming the agenda is not eaten by the usual status updates again.",
    "A teammate asked me what {rid} was about; I had no answer offhand and promised to "
    "dig through my notes later, which I have not done yet.",
    "{rid} was cross-referenced in an unrelated thread about something else entirely, "
    "mostly people arguing about office seating and the broken badge reader.",
]

# --- source-specific lead-ins (variety between restatements) ---------------------------
SOURCE_PREFIXES = {
    "user_message": ["", "Just so you know: ", "Reminder: "],
    "agent_summary": ["Summary: ", "", "Noted: "],
    "file_read": ["From the docs: ", "", "README says: "],
    "shell_output": ["", "log: ", "$ cat notes -> "],
}
SOURCES = tuple(SOURCE_PREFIXES)

# --- questions per class ---------------------------------------------------------------
LEXICAL_QUESTIONS = [
    "What do we know about {rid}?",
    "Tell me about {rid}.",
    "Brief me on {rid}.",
    "Summarise {rid} for me.",
]
TEMPORAL_QUESTION = "Before day {day}, what did we note about the {attr} of {sid}?"
PROVENANCE_QUESTIONS = [
    "What was recorded in session {session}?",
    "List everything from session {session}.",
]
CURRENCY_QUESTIONS = {
    "config": "What is the current {attr} in {rid}?",
    "incident": "What is the current root cause of {rid}?",
    "decision": "What is the current plan in {rid}?",
    "person": "What is the current ownership of {rid}?",
    "runbook": "What is the current first step in {rid}?",
}
NEGATION_QUESTIONS = [
    "What do we know about {rid} that has not been corrected since?",
    "Which statements on {rid} remain valid, leaving out whatever was since corrected?",
]
AGGREGATE_QUESTIONS = [
    "How many times did we record the fact in {rid}?",
    "How many notes restate what {rid} says?",
]
HYBRID_PREFIX = "{rid}: "

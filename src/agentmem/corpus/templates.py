"""Surface forms for the synthetic world (our own templates, not the study's).

Every fact type has *identifier-bearing* forms (they carry the record's identifier, e.g.
``CFG-7991``, and the service identifier ``SVC-5345``) and *paraphrase* forms (they name
the service and restate the value in words, with no identifier); questions are written
per query class (docs/STUDY.md §2). Services are named by a hyphenated slug
(``billing-api``), spelled in a memory as :data:`agentmem.corpus.generate.SERVICE_NAMED_SHARE`
decides. The forms, the service names and every placeholder (``{rid}``, ``{svc}``,
``{vp}``, ...) are described in ``docs/CORPUS.md``; ``docs/VALIDATION.md`` says how much
the questions share with their targets.
"""

from __future__ import annotations

# --- world vocabulary -----------------------------------------------------------------

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
# attribute -> values [(identifier form, paraphrase)], paraphrase statements, and the
# semantic question (a paraphrase of the statements)
CONFIG_ATTRIBUTES: dict[str, dict] = {
    "request timeout": {
        "values": [
            ("30s", "half a minute"),
            ("5s", "five seconds"),
            ("60s", "a full minute"),
            ("120s", "two minutes"),
            ("10s", "ten seconds"),
            ("90s", "a minute and a half"),
        ],
        "para": [
            "The {svc} gives up waiting on a slow call after {vp}; we tuned that after the "
            "spring load test.",
            "When a call hangs, the {svc} waits {vp} before it gives up, which keeps the "
            "queue moving.",
            "The {svc} will wait {vp} on a slow call, then it gives up so callers see an "
            "error instead.",
        ],
        "question": "How long does the {slug} wait on a slow call before it gives up?",
    },
    "retry limit": {
        "values": [
            ("3", "three more times"),
            ("5", "five more times"),
            ("0", "not even once"),
            ("10", "ten more times"),
            ("1", "just one more time"),
        ],
        "para": [
            "After a failed call the {svc} will retry {vp}, then it stops and reports the "
            "error upstream.",
            "A failed call gets retried {vp} by the {svc}; more than that only piles up load.",
            "The {svc} will try a failed call again {vp}, then it stops, as agreed with the "
            "team on call.",
        ],
        "question": "How many times will the {slug} retry a failed call?",
    },
    "connection pool size": {
        "values": [
            ("20", "twenty database connections"),
            ("50", "fifty database connections"),
            ("100", "a hundred database connections"),
            ("8", "eight database connections"),
        ],
        "para": [
            "The {svc} can hold at most {vp} open at the same time; beyond that requests "
            "wait in line.",
            "No more than {vp} are held open by the {svc} at the same time, to protect the "
            "primary.",
            "At busy times the {svc} can hold {vp} open, never more, so the database stays "
            "healthy.",
        ],
        "question": "How many database connections can the {slug} hold open at the same time?",
    },
    "cache TTL": {
        "values": [
            ("300s", "five minutes"),
            ("3600s", "one hour"),
            ("86400s", "a whole day"),
            ("60s", "one minute"),
        ],
        "para": [
            "Cached entries in the {svc} live for {vp} before they expire and get fetched "
            "again from the source.",
            "Cached entries live in the {svc} for {vp}; after that they expire and the next "
            "read is slow.",
            "In the {svc}, cached entries expire after {vp}, which is long enough for the "
            "nightly reports.",
        ],
        "question": "How long do cached entries live in the {slug} before they expire?",
    },
    "batch size": {
        "values": [
            ("500", "five hundred items"),
            ("1000", "a thousand items"),
            ("64", "sixty-four items"),
            ("250", "two hundred and fifty items"),
        ],
        "para": [
            "The {svc} processes its work in chunks of {vp} at a time, which the downstream "
            "jobs expect.",
            "Each chunk of work the {svc} processes holds {vp}; bigger chunks made the "
            "workers stall.",
            "Work reaches the {svc} in chunks of {vp} and gets processed together, one chunk "
            "at a time.",
        ],
        "question": "How big are the chunks of work the {slug} processes at a time?",
    },
    "log level": {
        "values": [
            ("DEBUG", "every debugging detail"),
            ("WARN", "only warnings and worse"),
            ("ERROR", "nothing but errors"),
            ("INFO", "routine informational lines"),
        ],
        "para": [
            "The {svc} writes {vp} to its logs, so expect that much detail when you go "
            "looking there.",
            "The {svc} logs hold {vp}; more detail has to be switched on by hand first.",
            "For the {svc}, the logs record {vp} and no more detail, which keeps the disk "
            "usage down.",
        ],
        "question": "How much detail does the {slug} write to its logs?",
    },
    "replica count": {
        "values": [
            ("3", "three copies"),
            ("5", "five copies"),
            ("2", "two copies"),
            ("7", "seven copies"),
        ],
        "para": [
            "We keep {vp} of the {svc} running side by side, so losing one machine is not "
            "an outage.",
            "The {svc} runs as {vp} side by side behind the balancer, each in its own zone.",
            "There are {vp} of the {svc} running at all times; the autoscaler never goes "
            "below that.",
        ],
        "question": "How many copies of the {slug} do we keep running side by side?",
    },
    "rate limit": {
        "values": [
            ("100/s", "a hundred requests each second"),
            ("1000/s", "a thousand requests each second"),
            ("20/s", "twenty requests each second"),
        ],
        "para": [
            "The {svc} accepts {vp} and throttles whatever traffic comes in beyond that point.",
            "The {svc} takes up to {vp} and throttles the extra traffic, per caller.",
            "Traffic above {vp} gets throttled by the {svc}, which answers with a retry hint.",
        ],
        "question": "How much traffic each second will the {slug} accept before it throttles?",
    },
    "memory limit": {
        "values": [
            ("512Mi", "half a gigabyte"),
            ("2Gi", "two gigabytes"),
            ("8Gi", "eight gigabytes"),
            ("256Mi", "a quarter of a gigabyte"),
        ],
        "para": [
            "The {svc} may use {vp} of RAM before it gets killed and restarted by the scheduler.",
            "Each copy of the {svc} gets killed once it uses more than {vp} of RAM, so watch "
            "for leaks.",
            "RAM for the {svc} is capped at {vp}; past that it gets killed, usually during "
            "the nightly batch.",
        ],
        "question": "How much RAM may the {slug} use before it gets killed?",
    },
    "max payload": {
        "values": [
            ("1MB", "one megabyte"),
            ("10MB", "ten megabytes"),
            ("64KB", "sixty-four kilobytes"),
        ],
        "para": [
            "The {svc} refuses any request body larger than {vp}, so big uploads must be "
            "split first.",
            "Request bodies sent to the {svc} must stay under {vp} or they get refused with "
            "an error.",
            "Anything over {vp} in a request body gets refused by the {svc} before it is "
            "even parsed.",
        ],
        "question": "What is the largest request body the {slug} will accept?",
    },
}
CONFIG_ID_FORMS = [
    "{rid} sets the {attr} of {svcid} to {v}.",
    "Per config record {rid}, {svcid} runs with {attr} = {v}.",
    "{rid}: {attr} for {svcid} is {v} in production.",
    "Checked {rid} in the settings repo: {svcid} has {attr} {v}.",
]
CONFIG_CORRECTION = (
    "Correction: the earlier notes on {rid} are out of date; the {attr} is now {v}, not {old}."
)

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
    "{rid}: {svcid} went down on day {when}; root cause {v}.",
    "Postmortem {rid} found {v} behind the {svcid} outage.",
    "{rid} closed, root cause: {v}, on {svcid}.",
    "Closed {rid}; the {svcid} outage on day {when} came down to {v}.",
]
INCIDENT_PARA = [
    "The {svc} went down that time because {vp}; it took most of an afternoon to get back.",
    "Behind the {svc} going down that afternoon: {vp}, and customers noticed before we did.",
    "That time the {svc} went down, it turned out {vp}; nobody had seen it coming.",
]
INCIDENT_QUESTION = "What was behind the {slug} going down that time?"
INCIDENT_CORRECTION = (
    "Correction: the earlier notes on {rid} are out of date; the root cause is now {v}, not {old}."
)
#: the temporal question (incidents are the episodic records: something happened on a day)
INCIDENT_TEMPORAL = "Which notes on {slug} date from before day {day}?"

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
    "{rid} decided that {svcid} will {v}.",
    "Decision record {rid}: {svcid} is to {v}.",
    "{rid} accepted: {v} for {svcid}.",
    "Per {rid}, the plan for {svcid} is to {v}.",
]
DECISION_PARA = [
    "After a long debate the team agreed the {svc} is going to {vp}; the vote was not close.",
    "The team settled it after that debate: the {svc} is going to {vp}, starting next quarter.",
    "After that debate we agreed the {svc} should {vp}; the team went along once the costs "
    "were laid out.",
]
DECISION_QUESTION = "What did the team agree the {slug} is going to do after that debate?"
DECISION_CORRECTION = (
    "Correction: the earlier notes on {rid} are out of date; the plan is now to {v}, not to {old}."
)

# --- people (PER) ---------------------------------------------------------------------
PERSON_ID_FORMS = [
    "{rid} owns {svcid}.",
    "{svcid} is owned by {rid}, per the ownership sheet.",
    "Ownership: {rid} is on point for {svcid}.",
    "Escalations for {svcid} go to {rid} first.",
]
PERSON_PARA = [
    "{name} is the one to call when the {svc} breaks, day or night, weekends too.",
    "If the {svc} breaks, {name} is the one to call first; they wrote most of its code.",
    "When the {svc} is in trouble, the person to call is {name}, who built most of it.",
]
PERSON_QUESTION = "Who is the person to call first when the {slug} breaks?"
PERSON_CORRECTION = (
    "Correction: the earlier notes on {rid} are out of date; the owner of {sid} is now "
    "{new_rid}, not {rid}."
)

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
    "{rid}: to {task} on {svcid}, first {v}.",
    "Runbook {rid} for {svcid}, {task}, starts with: {v}.",
    "{rid} says step one to {task} for {svcid} is to {v}.",
]
RUNBOOK_PARA = [
    "First thing, whenever the {svc} needs to {taskp}: {vp}, before anything else.",
    "Step one when the {svc} needs to {taskp} is to {vp}; skipping it caused trouble once.",
    "The first thing to do when the {svc} needs to {taskp} is {vp}, then follow the list.",
]
RUNBOOK_QUESTION = "What comes first when the {slug} needs to {taskp}?"
RUNBOOK_CORRECTION = (
    "Correction: the earlier notes on {rid} are out of date; the first step to {task} is "
    "now to {v}, not to {old}."
)

# --- distractors: mention an identifier, assert nothing about it ------------------------
DISTRACTORS = [
    "Someone asked about {rid} in the {svc} channel; nobody had an answer.",
    "Saw {rid} in a {svc} ticket title while triaging; no details, no owner.",
    "TODO: look into {rid} when there is time to read the {svc} history.",
    "{rid} came up in the {svc} sync, but we ran out of time before discussing it.",
    "A link to {rid} was shared in a long {svc} thread without any context.",
    "Searched the {svc} wiki for {rid} and found nothing useful.",
    "Is {rid} still relevant to {svc}? Nobody remembered, so the question stays open.",
    "Bookmarked {rid} for the weekly {svc} review meeting.",
    "A teammate on {svc} asked what {rid} was about; I had no answer offhand.",
    "{rid} was cross-referenced in an unrelated {svc} thread about office seating.",
]

# --- source-specific lead-ins (variety between restatements) ---------------------------
SOURCE_PREFIXES = {
    "user_message": ["Note: ", "FYI: ", "Reminder: "],
    "agent_summary": ["Summary: ", "Noted: ", "Recap: "],
    "file_read": ["From the docs: ", "README says: ", "Wiki: "],
    "shell_output": ["log: ", "$ cat notes -> ", "stdout: "],
}
SOURCES = tuple(SOURCE_PREFIXES)

# --- questions per class ---------------------------------------------------------------
LEXICAL_QUESTIONS = ["What do we know about {rid}?"]
PROVENANCE_QUESTIONS = [
    "What was recorded in session {session}?",
    "List everything from session {session}.",
]
CURRENCY_QUESTIONS = ["What is the current position on {rid}?"]
NEGATION_QUESTIONS = [
    "What do we know about {rid} that has not been corrected since?",
    "What of {rid} has stayed uncorrected since?",
]
AGGREGATE_QUESTIONS = ["How many times was {rid} written down?"]
SEMANTIC_PREFIX = "Remind me, "
HYBRID_PREFIX = "For {rid}, please remind me: "

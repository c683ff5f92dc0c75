"""What the gateway records: conversation history, the token ledger, tool exchanges."""

from django.db import models
from django.utils import timezone


class StoredMessage(models.Model):
    """One turn of a user's conversation with the ``model`` name the client asked for."""

    user_id = models.CharField(max_length=255)
    model = models.CharField(max_length=255)
    role = models.CharField(max_length=16)
    content = models.TextField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [models.Index(fields=["user_id", "model", "id"], name="history_lookup")]


class LedgerEntry(models.Model):
    """Tokens and cost of a turn, billed to its user (``kind`` "turn"), or of a judge or
    shadow run after it, or a smoke test's calls, charged to the agent and experiment only
    ("judge", "shadow", "smoke": never counted in a user's or key's budget). A turn answered wholly from the response
    cache is a "cache_hit": its tokens as first paid, cost 0, counted only as a request."""

    user_id = models.CharField(max_length=255)
    agent = models.CharField(max_length=255)
    experiment = models.CharField(max_length=255, blank=True, default="")
    variant = models.CharField(max_length=255, blank=True, default="")
    provider = models.CharField(max_length=64)  # the provider's name that answered
    # The upstream model that answered, and the turn's upstream attempts (retries and
    # fallbacks included).
    model = models.CharField(max_length=255, blank=True, default="", db_default="")
    attempts = models.PositiveIntegerField(default=1, db_default=1)
    completion_id = models.CharField(max_length=64)
    prompt_tokens = models.PositiveIntegerField()
    completion_tokens = models.PositiveIntegerField()
    total_tokens = models.PositiveIntegerField()
    cached_tokens = models.PositiveIntegerField(default=0, db_default=0)
    # Millionths of a USD for all of the turn's calls (None: one of them has no known price).
    cost_micro_usd = models.BigIntegerField(null=True, blank=True)
    api_key_id = models.IntegerField(null=True, blank=True)  # the minted key that paid
    kind = models.CharField(max_length=16, default="turn", db_default="turn")
    # What the response cache saved the turn: the cost its answers had when first paid.
    saved_micro_usd = models.BigIntegerField(default=0, db_default=0)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [
            models.Index(fields=["user_id", "created_at"], name="ledger_window"),
            models.Index(fields=["api_key_id", "created_at"], name="ledger_by_key"),
            models.Index(fields=["experiment", "variant"], name="ledger_by_experiment"),
        ]


class ApiKey(models.Model):
    """A minted ``sk-gw-…`` key (inference.money.keys): only its SHA-256 digest is kept,
    and the first characters to recognize it by. Revoked keys stay, for their spend."""

    name = models.CharField(max_length=255)
    user_id = models.CharField(max_length=255)  # the user every request with it is for
    digest = models.CharField(max_length=64, unique=True)
    prefix = models.CharField(max_length=16)
    agents = models.JSONField(null=True, blank=True)  # the agents it may call (None: all)
    guardrails = models.JSONField(default=list, blank=True)  # applied after the agent's
    rpm = models.PositiveIntegerField(null=True, blank=True)
    tpm = models.PositiveIntegerField(null=True, blank=True)
    budget_micro_usd = models.BigIntegerField(null=True, blank=True)
    budget_window = models.CharField(max_length=8, default="total")  # total, day or month
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)


class ToolExchange(models.Model):
    """The gateway's own tool calls (and results) of a round that ended at client tool
    calls, kept for an hour under each returned call id so the client's follow-up can
    put them back before its own results."""

    call_id = models.CharField(max_length=255)
    user_id = models.CharField(max_length=255)
    exchange = models.JSONField()  # {"calls": [...], "results": [...]}
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [
            models.Index(fields=["user_id", "call_id"], name="exchange_lookup"),
            models.Index(fields=["created_at"], name="exchange_expiry"),
        ]


class JudgeRun(models.Model):
    """One judge's look at one reply: done, or failed and why (a failure never reaches the
    user; it is kept here)."""

    completion_id = models.CharField(max_length=64)
    user_id = models.CharField(max_length=255)
    agent = models.CharField(max_length=255)  # the agent whose reply was judged
    experiment = models.CharField(max_length=255, blank=True, default="")
    variant = models.CharField(max_length=255, blank=True, default="")
    judge = models.CharField(max_length=255)
    judge_model = models.CharField(max_length=255)
    status = models.CharField(max_length=16)  # "ok" or "failed"
    error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)


class JudgeScore(models.Model):
    """One criterion's score of one judged reply (the run's fields repeated, so scores are
    read and averaged without a join)."""

    run = models.ForeignKey(JudgeRun, on_delete=models.CASCADE, related_name="scores")
    completion_id = models.CharField(max_length=64)
    user_id = models.CharField(max_length=255)
    agent = models.CharField(max_length=255)
    experiment = models.CharField(max_length=255, blank=True, default="")
    variant = models.CharField(max_length=255, blank=True, default="")
    judge = models.CharField(max_length=255)
    criterion = models.CharField(max_length=255)
    score = models.PositiveSmallIntegerField()  # 0 to 10
    reasoning = models.TextField()
    judge_model = models.CharField(max_length=255)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [
            models.Index(fields=["agent", "created_at"], name="score_by_agent"),
            models.Index(
                fields=["experiment", "judge", "criterion", "created_at"], name="score_by_metric"
            ),
        ]


class BudgetReservation(models.Model):
    """Tokens and cost set aside for one model call of a limited caller
    (``inference.money.admission``): its estimate while it runs, then what it spent until
    its work's ledger row replaces it. Admission counts them with the ledger, so
    concurrent calls cannot all pass one check; one a crashed process left behind stops
    counting at ``expires_at``."""

    user_id = models.CharField(max_length=255)
    tokens = models.BigIntegerField()
    micro_usd = models.BigIntegerField(default=0, db_default=0)  # its estimated cost
    api_key_id = models.IntegerField(null=True, blank=True)  # the key it is held against
    # The first call of a request: it counts for the key's requests per minute.
    request = models.BooleanField(default=True, db_default=True)
    expires_at = models.DateTimeField()

    class Meta:
        indexes = [
            models.Index(fields=["user_id", "expires_at"], name="reservation_lookup"),
            models.Index(fields=["api_key_id", "expires_at"], name="reservation_by_key"),
        ]


class RequestRecord(models.Model):
    """One ``/v1`` request as the admin's Requests pages show it: its log line's fields
    and its spans (docs/telemetry.md), kept ``telemetry.retention_days``.

    ``spans`` is compact: one list per span, ``[name, kind, parent index (-1: none),
    start (µs after the request began), duration (µs), error.type or None,
    attributes]``, parents before their children."""

    request_id = models.CharField(max_length=64)  # the X-Request-Id
    created_at = models.DateTimeField()  # when the request arrived
    path = models.CharField(max_length=64)
    user_id = models.CharField(max_length=255, blank=True, default="")
    model = models.CharField(max_length=255, blank=True, default="")  # what the client asked
    agent = models.CharField(max_length=255, blank=True, default="")  # the agent that answered
    experiment = models.CharField(max_length=255, blank=True, default="")
    variant = models.CharField(max_length=255, blank=True, default="")
    completion_id = models.CharField(max_length=64, blank=True, default="")
    status = models.PositiveSmallIntegerField()  # the HTTP status code
    error = models.CharField(max_length=64, blank=True, default="")
    stream = models.BooleanField(default=False)
    latency_ms = models.FloatField()
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    cost_micro_usd = models.BigIntegerField(null=True, blank=True)
    upstream = models.CharField(max_length=255, blank=True, default="")  # <provider>/<model>
    attempts = models.PositiveIntegerField(default=0)
    # A cached agent's: {result, age_s, matched_question} (docs/caching.md); else null.
    cache = models.JSONField(null=True, blank=True)
    spans = models.JSONField(default=list)

    class Meta:
        indexes = [
            models.Index(fields=["created_at"], name="requests_by_time"),
            models.Index(fields=["request_id"], name="requests_by_id"),
            models.Index(fields=["user_id", "created_at"], name="requests_by_user"),
            models.Index(fields=["agent", "created_at"], name="requests_by_agent"),
            models.Index(fields=["completion_id"], name="requests_by_completion"),
        ]


class StoredResponse(models.Model):
    """A ``/v1/responses`` answer kept for its user (``store``, docs/responses.md): the
    response object, the items of its request's ``input`` and the one it continued, so
    ``previous_response_id`` can rebuild the chain. Kept 30 days."""

    response_id = models.CharField(max_length=64, primary_key=True)
    user_id = models.CharField(max_length=255)
    previous_id = models.CharField(max_length=64, blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    input_items = models.JSONField(default=list)
    response = models.JSONField(default=dict)

    class Meta:
        indexes = [
            models.Index(fields=["user_id", "created_at"], name="responses_by_user"),
            models.Index(fields=["expires_at"], name="responses_by_expiry"),
        ]


class Memory(models.Model):
    """A durable fact an agent keeps about one user (docs/memory.md), with its vector
    from one embedder (float32 bytes). ``source`` is the completion id it was extracted
    from; empty when added by hand."""

    user_id = models.CharField(max_length=255)
    agent = models.CharField(max_length=255)
    text = models.TextField()
    embedder = models.CharField(max_length=255)
    vector = models.BinaryField()
    created_at = models.DateTimeField(default=timezone.now)
    source = models.CharField(max_length=64, blank=True, default="")

    class Meta:
        indexes = [
            models.Index(fields=["user_id", "agent", "embedder", "id"], name="memories_lookup")
        ]


class Erasure(models.Model):
    """A user erased (``DELETE /admin/users/{id}``): the digest their id became, and when.
    Work that began before it may not write the user's data back (``inference.erasures``)."""

    digest = models.CharField(max_length=64)
    erased_at = models.DateTimeField()

    class Meta:
        indexes = [models.Index(fields=["digest", "erased_at"], name="erasure_lookup")]


class CachedReply(models.Model):
    """A model call's complete reply, kept by the response cache (docs/caching.md) under
    the SHA-256 of the call (``inference.cache.keys``); ``context``: the same without the
    last user message's text, and ``vector`` that text's embedding (semantic lookups).
    ``user_id``: whose request paid for it (purges and erasure)."""

    key = models.CharField(max_length=64, unique=True)
    context = models.CharField(max_length=64)
    agent = models.CharField(max_length=255)
    user_id = models.CharField(max_length=255)
    reply = models.TextField()  # JSON (inference.cache.entries)
    vector = models.BinaryField(null=True)
    created_at = models.DateTimeField()
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField()  # the last hit (or the store): eviction goes by it

    class Meta:
        indexes = [
            models.Index(fields=["context", "expires_at"], name="cache_context"),
            models.Index(fields=["agent", "user_id"], name="cache_owner"),
            models.Index(fields=["user_id"], name="cache_user"),
            models.Index(fields=["used_at"], name="cache_use"),
            models.Index(fields=["expires_at"], name="cache_expiry"),
        ]


class StoredFile(models.Model):
    """A file a user uploaded (``/v1/files``, docs/files.md): its metadata here, its bytes
    under ``files.dir`` in a file named by its id."""

    id = models.CharField(max_length=40, primary_key=True)  # file-<hex>
    user_id = models.CharField(max_length=255)
    filename = models.CharField(max_length=255)
    purpose = models.CharField(max_length=32)
    media_type = models.CharField(max_length=255)
    bytes = models.BigIntegerField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [models.Index(fields=["user_id", "created_at"], name="files_of_user")]


class McpConnection(models.Model):
    """A user's account at an MCP server that signs each user in (``mcp.<server>.oauth``,
    docs/mcp.md): the tokens its authorization server granted the gateway for them, sealed
    with a key derived from the secret key (``inference.mcpauth.sealing``), never readable
    here. ``issuer`` and ``client_id``: who granted them, to whom (a refresh asks the same)."""

    user_id = models.CharField(max_length=255)
    server = models.CharField(max_length=255)  # its name under mcp
    issuer = models.CharField(max_length=2048)
    client_id = models.CharField(max_length=255)
    tokens = models.TextField()  # sealed JSON: the access token, the refresh token
    scopes = models.TextField(blank=True, default="")  # granted, space-separated
    expires_at = models.DateTimeField(null=True, blank=True)  # the access token's (None: unsaid)
    created_at = models.DateTimeField(default=timezone.now)
    refreshed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user_id", "server"], name="mcp_connection_of_user")
        ]


class McpClient(models.Model):
    """The gateway as a client of an authorization server, registered dynamically (RFC
    7591) for one MCP server's redirect URI: the registration as the server answered it,
    sealed (it may hold a client secret)."""

    server = models.CharField(max_length=255)
    issuer = models.CharField(max_length=2048)
    redirect_uri = models.CharField(max_length=2048)
    client_id = models.CharField(max_length=255)
    registration = models.TextField()  # sealed JSON (RFC 7591 client information)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [models.Index(fields=["server", "client_id"], name="mcp_client_lookup")]


class Evaluation(models.Model):
    """A replay of an agent's or experiment's recorded turns through candidate agents,
    judged (docs/evaluations.md). ``heartbeat_at``: when the process running it last said
    it still does; one that stops saying so is reported ``failed``."""

    name = models.CharField(max_length=255)
    status = models.CharField(max_length=16)  # running, done, cancelled, failed
    candidates = models.JSONField()  # agent names
    source = models.JSONField()  # {"agent": name} or {"experiment": name}
    since = models.DateTimeField(null=True, blank=True)
    until = models.DateTimeField(null=True, blank=True)
    users = models.JSONField(default=list)  # the users whose turns it takes (empty: all)
    limit = models.PositiveIntegerField()
    judges = models.JSONField()  # judge names
    total = models.PositiveIntegerField(default=0)
    done = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(default=timezone.now)


class EvaluationCase(models.Model):
    """One recorded turn of an evaluation: the question and the original reply, then each
    candidate's reply (``candidates``: by agent, ``{reply, error, cost_micro_usd,
    latency_ms, scores, judge_errors}``) and the original's scores (``original``). Ids
    grow with the turn's time, so the newest case has the highest."""

    evaluation = models.ForeignKey(Evaluation, on_delete=models.CASCADE, related_name="cases")
    user_id = models.CharField(max_length=255)
    recorded_at = models.DateTimeField()  # when the original reply was stored
    question = models.TextField()
    original = models.JSONField()  # {reply, cost_micro_usd, scores, judge_errors}
    candidates = models.JSONField(default=dict)
    done = models.BooleanField(default=False)

    class Meta:
        indexes = [
            models.Index(fields=["evaluation", "id"], name="evaluation_cases"),
            models.Index(fields=["user_id"], name="evaluation_cases_of_user"),
        ]


class TriggerRun(models.Model):
    """One firing of a trigger (docs/automation.md). ``slot`` is what fired it once for the
    whole deployment: the due minute of a schedule, the deployment's start of an on_start
    trigger (None for a webhook's). The unique (trigger, slot) pair is the lease: of the
    processes that find a slot due, the one whose insert succeeds runs it."""

    trigger = models.CharField(max_length=255)
    slot = models.CharField(max_length=64, null=True, blank=True)
    kind = models.CharField(max_length=16)  # schedule, webhook or on_start
    agent = models.CharField(max_length=255)
    user_id = models.CharField(max_length=255)
    status = models.CharField(max_length=16, default="queued")  # running, done, failed
    reply = models.TextField(blank=True, default="")
    error = models.TextField(blank=True, default="")
    usage = models.JSONField(default=dict)  # prompt_tokens, completion_tokens, total_tokens
    cost_micro_usd = models.BigIntegerField(null=True, blank=True)
    delivery = models.CharField(max_length=16, blank=True, default="")  # delivered, failed
    created_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["trigger", "slot"], name="trigger_runs_once_per_slot")
        ]
        indexes = [models.Index(fields=["trigger", "id"], name="trigger_runs_by_trigger")]


class Deployment(models.Model):
    """The one row saying since when some gateway process has been alive (``epoch``) and
    until when the last heartbeat vouches for one (``alive_until``): a process that starts
    after ``alive_until`` starts the deployment anew (on_start triggers fire)."""

    epoch = models.DateTimeField()
    alive_until = models.DateTimeField()


class AgentTask(models.Model):
    """A background task an agent dispatched (``dispatch_task``) for its caller. A running
    task's process renews ``heartbeat_at``; one whose heartbeat is older than the lease
    (its process died) is taken up again, like a queued one, at most
    ``limits.max_task_attempts`` times in all."""

    id = models.CharField(max_length=40, primary_key=True)  # task-<hex>
    user_id = models.CharField(max_length=255)
    agent = models.CharField(max_length=255)  # the agent that runs it
    dispatched_by = models.CharField(max_length=255, blank=True, default="")  # the agent
    message = models.TextField()
    status = models.CharField(max_length=16, default="queued")  # running, done, failed
    result = models.TextField(blank=True, default="")
    error = models.TextField(blank=True, default="")
    attempts = models.PositiveIntegerField(default=0)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)
    # Its caller, besides the user: the minted key whose limits it runs under (None: no
    # key), and how deep in tasks it is (1: dispatched by a request's turn).
    api_key_id = models.IntegerField(null=True, blank=True)
    depth = models.PositiveSmallIntegerField(default=1, db_default=1)

    class Meta:
        indexes = [models.Index(fields=["status", "heartbeat_at"], name="tasks_to_run")]


class SmokeRun(models.Model):
    """One run of a smoke test: the persona's and the agent's messages, and the judges'
    scores of the transcript (``{judge: {mean, criteria: {name: {score, reasoning}}}}``)."""

    test = models.CharField(max_length=255)
    agent = models.CharField(max_length=255)
    persona = models.CharField(max_length=255)
    status = models.CharField(max_length=16, default="queued")  # running, done, failed
    transcript = models.JSONField(default=list)  # [{role: persona|agent, text}]
    scores = models.JSONField(default=dict)
    passed = models.BooleanField(null=True, blank=True)  # None: no min_score, or not done
    error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["test", "id"], name="smoke_runs_by_test")]


class Lease(models.Model):
    """Work one process at a time does, across every process and replica sharing the
    database (``inference.automation.leases``): who holds it until when, and the last UTC
    day it was done, for work done once a day."""

    name = models.CharField(max_length=64, unique=True)
    holder = models.CharField(max_length=64, blank=True, default="")
    until = models.DateTimeField()
    done_on = models.DateField(null=True, blank=True)


class ReconciledSpend(models.Model):
    """One row of spend reconciliation (docs/reconciliation.md): what a provider billed for
    one model on one UTC day, as its billing API said, beside what the ledger computed for
    that provider's calls of it that day, both as of ``fetched_at``, in millionths of a USD."""

    provider = models.CharField(max_length=64)  # its name in the config
    day = models.DateField()
    model = models.CharField(max_length=255)
    billed_micro_usd = models.BigIntegerField()
    computed_micro_usd = models.BigIntegerField()
    fetched_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["provider", "day", "model"], name="reconciled_spend_once"
            )
        ]


class BillingFetch(models.Model):
    """The last fetch of one provider's billing API: when, and why it failed ("": it did
    not)."""

    provider = models.CharField(max_length=64, unique=True)
    fetched_at = models.DateTimeField()
    error = models.TextField(blank=True, default="")


class UsedOnce(models.Model):
    """Something good for one use across every process sharing the database
    (``inference.once``): a webhook's signature within its window, an MCP sign-in's state.
    The digest's unique row is the use: the first insert wins, a later one is a replay.
    Rows go once ``expires_at`` has passed (the thing they stand for is refused by then)."""

    kind = models.CharField(max_length=32)
    digest = models.CharField(max_length=64)  # SHA-256 of what was used, in hex
    expires_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["kind", "digest"], name="used_once")]
        indexes = [models.Index(fields=["expires_at"], name="used_once_expiry")]


class Batch(models.Model):
    """A batch of requests a user sent as a file (``/v1/batches``) or a list
    (``/v1/messages/batches``), run in the background as that user's requests, under the
    key it was created with (docs/batches.md). ``status`` is OpenAI's (Message Batches
    show theirs from it); a process running it renews ``heartbeat_at``, and one whose
    heartbeat is older than the lease is taken over by another process."""

    id = models.CharField(max_length=40, primary_key=True)  # batch_<hex> or msgbatch_<hex>
    user_id = models.CharField(max_length=255)
    api_key_id = models.IntegerField(null=True, blank=True)
    dialect = models.CharField(max_length=16, default="openai")  # openai, anthropic
    endpoint = models.CharField(max_length=64)  # the path each line is a request to
    input_file_id = models.CharField(max_length=40, blank=True, default="")
    completion_window = models.CharField(max_length=8, default="24h")
    status = models.CharField(max_length=16, default="validating")
    errors = models.JSONField(null=True, blank=True)  # [{code, message, line}]
    output_file_id = models.CharField(max_length=40, blank=True, default="")
    error_file_id = models.CharField(max_length=40, blank=True, default="")
    metadata = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    in_progress_at = models.DateTimeField(null=True, blank=True)
    finalizing_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    failed_at = models.DateTimeField(null=True, blank=True)
    expired_at = models.DateTimeField(null=True, blank=True)
    cancelling_at = models.DateTimeField(null=True, blank=True)
    cancelled_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["user_id", "dialect", "created_at"], name="batches_of_user"),
            models.Index(fields=["status", "heartbeat_at"], name="batches_to_run"),
        ]


class BatchLine(models.Model):
    """One request of a batch. ``status``: ``queued``, then ``sent`` once a process claimed
    it (before anything goes upstream: a line is never sent twice), or ``upstream`` once it
    is in the provider batch ``native_batch`` of ``native_provider`` (native mode: polled,
    never sent again), then ``succeeded``, ``failed``, ``cancelled`` or ``expired`` with
    its outcome: the response's status and body, or the error's code and message."""

    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="lines")
    number = models.PositiveIntegerField()  # 1-based, in the input's order
    custom_id = models.CharField(max_length=512)
    body = models.JSONField()
    status = models.CharField(max_length=16, default="queued")
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    response = models.JSONField(null=True, blank=True)
    request_id = models.CharField(max_length=64, blank=True, default="")
    error_code = models.CharField(max_length=64, blank=True, default="")
    error_message = models.TextField(blank=True, default="")
    cost_micro_usd = models.BigIntegerField(default=0)
    finished_at = models.DateTimeField(null=True, blank=True)
    native_provider = models.CharField(max_length=255, blank=True, default="")
    native_batch = models.CharField(max_length=255, blank=True, default="")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["batch", "number"], name="one_line_per_number")
        ]
        indexes = [models.Index(fields=["batch", "status", "number"], name="lines_to_run")]


class GuardrailEvent(models.Model):
    """A guardrail that redacted, blocked or warned (inference.guardrails): whose request,
    at which stage, and what it found as entity counts, never the matched text."""

    created_at = models.DateTimeField(default=timezone.now)
    user_id = models.CharField(max_length=255)
    api_key_id = models.BigIntegerField(null=True, blank=True)
    agent = models.CharField(max_length=255)
    guardrail = models.CharField(max_length=64)
    stage = models.CharField(max_length=16)  # input, output or tool_results
    action = models.CharField(max_length=16)  # redacted, blocked or warned
    detail = models.JSONField(default=dict)

    class Meta:
        indexes = [
            models.Index(fields=["user_id", "id"], name="guardrail_events_by_user"),
            models.Index(fields=["guardrail", "id"], name="guardrail_events_by_name"),
        ]

# The gateway in a container: daphne on 0.0.0.0:8421 through `manage.py serve`
# (migrations, config check, then serve). Mount the config folder at /config and give
# the database with DATABASE_URL (compose.yaml does both, with PostgreSQL).
FROM python:3.12-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    GATEWAY_CONFIG=/config/gateway.yaml \
    DATABASE_URL=sqlite:////data/gateway.sqlite3

WORKDIR /app
COPY requirements.txt .
# Hash-checked: a package file that is not the one the lock file names is refused.
RUN pip install --no-cache-dir --require-hashes -r requirements.txt
COPY manage.py ./
COPY core core
COPY agents agents
COPY inference inference
COPY adminui adminui
COPY gateway gateway
COPY templates templates
COPY examples examples

RUN mkdir -p /config /data && cp examples/gateway.example.yaml /config/gateway.yaml
VOLUME ["/config", "/data"]
EXPOSE 8421
CMD ["python", "manage.py", "serve", "--host", "0.0.0.0", "--port", "8421"]

# graphboard's image: the API server (`graphboard serve`) and the Celery build workers
# (`graphboard worker`) run from it; docker-compose.yml wires them to PostgreSQL and Redis.
# The wheels: graphboard's, with its compiled part (accel/_render.c), and graphboard-btree's
# (packages/graphboard-btree: tb_nodes written straight into SQLite's format), both built where
# a compiler is; the image that runs carries no compiler.
FROM python:3.11-slim AS wheel
RUN apt-get update \
    && apt-get install -y --no-install-recommends g++ \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY pyproject.toml setup.py README.md ./
COPY backend ./backend
COPY packages/graphboard-btree ./packages/graphboard-btree
RUN pip install --no-cache-dir --disable-pip-version-check wheel \
    && pip wheel --no-cache-dir --no-deps --wheel-dir /wheels . ./packages/graphboard-btree

FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /app

# torch first and pinned, as scripts/setup does: its own layer, reused while the project
# changes, and the version the tests run against.
RUN pip install torch==2.13.0

COPY --from=wheel /wheels /wheels
RUN pip install /wheels/*.whl && rm -rf /wheels
COPY frontend ./frontend

# A non-editable install has no repository beside it: point the server at the viewer's files.
ENV GRAPHBOARD_STATIC_DIR=/app/frontend/static \
    GRAPHBOARD_TEMPLATES_DIR=/app/frontend/templates \
    GRAPHBOARD_DATA_DIR=/data

RUN useradd --create-home --uid 1000 graphboard \
    && mkdir -p /data \
    && chown graphboard /data
USER graphboard
VOLUME ["/data"]
EXPOSE 8000

CMD ["graphboard", "serve", "--host", "0.0.0.0", "--port", "8000", "--data-dir", "/data"]

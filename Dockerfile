# syntax=docker/dockerfile:1
# Teamlore: one image for the API and web wiki, the Celery worker and beat, the MCP server and the
# platform connectors (docker-compose.yml and deploy/k8s pick the command).

# ---- build: a wheel and its dependencies (every extra: each platform, both server stores, the
# model client), with compilers available ----
FROM python:3.11-slim AS build
WORKDIR /src
RUN pip install --no-cache-dir --upgrade pip build
COPY pyproject.toml README.md ./
COPY teamlore ./teamlore
RUN python -m build --wheel --outdir /dist \
 && python -m venv /opt/teamlore \
 && /opt/teamlore/bin/pip install --no-cache-dir "$(ls /dist/*.whl)[all]"

# ---- runtime: the virtual environment only, as a non-root user ----
FROM python:3.11-slim AS runtime
RUN groupadd --system --gid 10001 teamlore \
 && useradd --system --uid 10001 --gid teamlore --home-dir /data --shell /usr/sbin/nologin teamlore \
 && mkdir -p /data && chown teamlore:teamlore /data
COPY --from=build /opt/teamlore /opt/teamlore
ENV PATH="/opt/teamlore/bin:$PATH" \
    PYTHONUNBUFFERED=1 \
    TEAMLORE_DATA_DIR=/data
USER teamlore
WORKDIR /data
VOLUME ["/data"]
EXPOSE 8000 8001
HEALTHCHECK --interval=30s --timeout=20s --retries=3 CMD ["teamlore", "doctor", "--liveness"]
ENTRYPOINT ["teamlore"]
CMD ["serve", "--host", "0.0.0.0", "--port", "8000"]

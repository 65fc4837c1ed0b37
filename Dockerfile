# Gweta API: slim, non-root, the embedding model's weights inside the image, nothing downloaded at start.
# Build: docker build -t gweta .
# Run:   docker run -p 8000:8000 -e GWETA_AUTH__ENABLED=true -e GWETA_AUTH__JWT_SECRET=<32+ bytes> gweta
# The image serves on 0.0.0.0, so with auth off `gweta serve` refuses to start (the API and its debug endpoint would
# be open to anyone who can reach it); a public demo without auth must say so: -e GWETA_ALLOW_PUBLIC_WITHOUT_AUTH=true
# Swagger UI and ReDoc for /docs and /redoc, from their npm lock: the docs need no CDN.
FROM node:20-slim AS api-docs
WORKDIR /api-docs
COPY tools/api-docs/package.json tools/api-docs/package-lock.json tools/api-docs/.npmrc ./
RUN npm ci --ignore-scripts --no-audit --no-fund

FROM python:3.11-slim AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONDONTWRITEBYTECODE=1
WORKDIR /app
COPY pyproject.toml poetry.lock README.md ./
COPY scripts ./scripts
COPY api ./api
COPY ingestion ./ingestion
# Exactly the locked versions; torch as its CPU build (the PyPI build is CUDA and several GB larger).
# tesseract itself is installed in the runtime stage below, not here.
RUN python scripts/install.py --venv /opt/venv --groups main,ml,ocr --no-system-packages \
        --torch-index https://download.pytorch.org/whl/cpu

FROM python:3.11-slim
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1 \
    GWETA_DATA_DIR=/app/data \
    GWETA_ALLOW_PUBLIC_WITHOUT_AUTH=false \
    PORT=8000
# tesseract OCRs scanned PDFs at ingestion.
RUN apt-get update && apt-get install -y --no-install-recommends tesseract-ocr && rm -rf /var/lib/apt/lists/* \
    && useradd --create-home --uid 10001 gweta
WORKDIR /app
COPY --from=build /opt/venv /opt/venv
COPY --chown=gweta:gweta . /app
COPY --from=api-docs --chown=gweta:gweta /api-docs/node_modules /app/tools/api-docs/node_modules
USER gweta
# The demo corpus is ingested at build time, so the container serves answers as soon as it starts.
RUN gweta ingest sample_corpus
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s \
    CMD python -c "import os,urllib.request; urllib.request.urlopen(f'http://127.0.0.1:{os.environ[\"PORT\"]}/healthz', timeout=4)"
CMD ["sh", "-c", "exec gweta serve --host 0.0.0.0 --port ${PORT}"]

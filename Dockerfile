# syntax=docker/dockerfile:1
# The cxlredis server image that helm/cxlredis deploys.
#
#   docker build -t cxlredis:0.1.0 .
#   docker run --rm -p 6379:6379 --shm-size 2g cxlredis:0.1.0
#
# The build stage compiles the Cython extensions into wheels (the package and
# its dependencies); the runtime stage installs only those wheels, so it has no
# compiler. The server runs as the unprivileged user cxlredis (UID/GID 10001,
# what the chart's securityContext expects) and writes nothing outside its
# working directory and the arena, so the root file system can be read-only.

FROM python:3.11-slim AS build
RUN apt-get update \
    && apt-get install -y --no-install-recommends gcc libc6-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY pyproject.toml setup.py README.md ./
COPY ext ext
COPY cxlredis cxlredis
# redis-py (with hiredis) is for the chart's `helm test` pod, which runs this image.
RUN pip wheel --no-cache-dir --wheel-dir /wheels . "redis>=5.0" "hiredis>=2.3"

FROM python:3.11-slim
ENV PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
RUN groupadd --system --gid 10001 cxlredis \
    && useradd --system --uid 10001 --gid 10001 --home-dir /var/lib/cxlredis \
       --no-create-home --shell /usr/sbin/nologin cxlredis
RUN --mount=type=bind,from=build,source=/wheels,target=/wheels \
    pip install --no-cache-dir --no-index --find-links /wheels cxlredis redis hiredis \
    && python -c "import cxlredis.server"
COPY conf/cxlredis.conf /etc/cxlredis/cxlredis.conf
RUN mkdir -p /var/lib/cxlredis && chown cxlredis:cxlredis /var/lib/cxlredis
WORKDIR /var/lib/cxlredis
USER 10001:10001
EXPOSE 6379
# The documented config file listens on 127.0.0.1 only; a container must
# listen on its own address to be reachable. The chart passes its own file.
ENTRYPOINT ["cxlredis-server"]
CMD ["/etc/cxlredis/cxlredis.conf", "--bind", "0.0.0.0"]

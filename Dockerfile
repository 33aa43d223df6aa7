# syntax=docker/dockerfile:1
# The lpstudy image. The torch wheel follows the hardware, chosen by a build argument:
#
#   docker build --build-arg TORCH_INDEX=cu128 -t lpstudy:gpu .   # CUDA build (the default)
#   docker build --build-arg TORCH_INDEX=cpu   -t lpstudy:cpu .   # CPU build, a fraction the size
#
# TORCH_INDEX names an index under https://download.pytorch.org/whl/ (cu126, cu128, cu130, cpu, ...);
# pick one your driver supports. docker-compose.yml builds both images.

ARG PYTHON_VERSION=3.11

# ---- build: one virtual environment, torch from PyTorch's index, lpstudy from this tree ----------
FROM python:${PYTHON_VERSION}-slim AS build
ARG TORCH_INDEX=cu128
# The same range as pyproject.toml's dependency (a test keeps them equal).
ARG TORCH_SPEC="torch>=2.4,<2.14"
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PATH=/opt/venv/bin:$PATH
RUN python -m venv /opt/venv
# torch alone first: the biggest layer, rebuilt only when the index or the range changes. Once it
# is installed, installing lpstudy below keeps it (it satisfies the range) instead of taking PyPI's.
RUN pip install --index-url "https://download.pytorch.org/whl/${TORCH_INDEX}" "${TORCH_SPEC}"
WORKDIR /src
COPY pyproject.toml README.md ./
COPY lpstudy ./lpstudy
# s3: boto3, for an artifact store on S3 or MinIO (LPSTUDY_ARTIFACTS=s3://BUCKET).
RUN pip install ".[dashboard,postgres,grpc,s3]"

# ---- runtime: the environment, the dashboard's pages and a non-root user; no sources, no pip cache --
FROM python:${PYTHON_VERSION}-slim AS runtime
# The mount points of the named volumes belong to the user: a fresh volume takes their owner.
RUN groupadd --gid 1000 lpstudy \
 && useradd --uid 1000 --gid lpstudy --create-home --shell /usr/sbin/nologin lpstudy \
 && mkdir -p /home/lpstudy/.cache/lpstudy /run/lpstudy-gpus /var/lib/lpstudy/artifacts \
 && chown -R lpstudy:lpstudy /home/lpstudy/.cache /run/lpstudy-gpus /var/lib/lpstudy
COPY --from=build /opt/venv /opt/venv
COPY app /opt/lpstudy/app
COPY deploy/docker/lpstudy-claim-gpu /usr/local/bin/lpstudy-claim-gpu
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    LPSTUDY_APP_DIR=/opt/lpstudy/app \
    NVIDIA_DRIVER_CAPABILITIES=compute,utility \
    STREAMLIT_BROWSER_GATHER_USAGE_STATS=false
USER lpstudy
WORKDIR /home/lpstudy
# Fails the build if the installed command does not start. No ENTRYPOINT: a container's command
# (lpstudy ..., python ...) runs as given, in docker compose and Kubernetes alike.
RUN lpstudy --version && lpstudy --help >/dev/null
# dashboard, optuna-dashboard, storage-proxy
EXPOSE 8501 8080 13000
CMD ["lpstudy", "--help"]

# syntax=docker/dockerfile:1
# The lpstudy image. The torch wheel follows the hardware, chosen by a build argument; everything
# else, torch's version included, comes from constraints.txt, so that the two builds carry the same
# Optuna, SQLAlchemy and psycopg against one database, however far apart they were built:
#
#   docker build -t lpstudy:0.1.0-gpu .                                 # CUDA build (the default)
#   docker build --build-arg TORCH_INDEX=cpu   -t lpstudy:0.1.0-cpu .   # CPU build, a fraction the size
#
# TORCH_INDEX is `pypi` (the default: PyPI's torch, the CUDA 13.0 build, whose CUDA wheels
# constraints.txt pins; NVIDIA driver 580 or later) or an index under https://download.pytorch.org/whl/
# (cpu; cu128 or cu126 for an older driver: that index's CUDA wheels, resolved then, not pinned). docker-compose.yml builds both images. The tag is lpstudy's version
# (pyproject.toml); the Kubernetes overlays pin it with the digest of your push (docs/deployment.md).
# constraints.txt is made by deploy/docker/freeze-constraints.py from an environment with
# lpstudy's image extras installed.

# A version tag and its digest (the multi-arch index, `docker buildx imagetools inspect`): the very image.
ARG PYTHON_IMAGE=python:3.11.13-slim-bookworm@sha256:86adf8dbadc3d6e82ee5dd2c74bec2e1c2467cdad47886280501df722372d2e1

# ---- build: one virtual environment, torch from PyTorch's index, the dependencies, then lpstudy -----
FROM ${PYTHON_IMAGE} AS build
ARG TORCH_INDEX=pypi
# The same range as pyproject.toml's dependency (a test keeps them equal); constraints.txt picks the
# version within it.
ARG TORCH_SPEC="torch>=2.4,<2.14"
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PATH=/opt/venv/bin:$PATH
RUN python -m venv /opt/venv
WORKDIR /src
COPY constraints.txt ./
# torch first: the biggest layer, rebuilt only when the index or the constraints change. From PyPI
# with its CUDA wheels as pinned; or torch alone from PyTorch's index (--index-url and no other
# index, so that no package can come from the wrong one; --no-deps), then its dependencies from PyPI,
# pinned. Its pin has no local label, so the index's +cpu or +cu128 build of that version satisfies it.
RUN if [ "${TORCH_INDEX}" = pypi ]; then \
        pip install -c constraints.txt "${TORCH_SPEC}"; \
    else \
        pip install --no-deps --index-url "https://download.pytorch.org/whl/${TORCH_INDEX}" -c constraints.txt "${TORCH_SPEC}" \
        && pip install -c constraints.txt "${TORCH_SPEC}"; \
    fi
# Every other dependency, exactly as pinned, before any source: a change of lpstudy's code reuses
# this layer and reinstalls nothing. The CUDA wheels stay out: the GPU build has them with its
# torch, the CPU build needs none.
RUN grep -vE '^(nvidia-|cuda-|triton==)' constraints.txt > /tmp/requirements.txt \
    && pip install -c constraints.txt -r /tmp/requirements.txt
COPY pyproject.toml README.md ./
COPY lpstudy ./lpstudy
# s3: boto3, for an artifact store on S3 or MinIO (LPSTUDY_ARTIFACTS=s3://BUCKET). Everything it
# needs is installed already; pip check fails the build if the constraints missed a requirement.
RUN pip install -c constraints.txt ".[dashboard,postgres,grpc,s3]" && pip check

# ---- runtime: the environment, the dashboard's pages, the corpus and a non-root user ---------------
FROM ${PYTHON_IMAGE} AS runtime
# The mount points of the named volumes belong to the user: a fresh volume takes their owner.
RUN groupadd --gid 1000 lpstudy \
 && useradd --uid 1000 --gid lpstudy --create-home --shell /usr/sbin/nologin lpstudy \
 && mkdir -p /home/lpstudy/.cache/lpstudy /run/lpstudy-gpus /var/lib/lpstudy/artifacts /opt/lpstudy/data \
 && chown -R lpstudy:lpstudy /home/lpstudy/.cache /run/lpstudy-gpus /var/lib/lpstudy
# The corpus in a layer of its own (1.1 MB), checked against lpstudy's checksum: workers read it
# through LPSTUDY_DATA and never download it, so they run on nodes without internet access.
ADD --checksum=sha256:86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed --chmod=0644 https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt /opt/lpstudy/data/tinyshakespeare.txt
COPY --from=build /opt/venv /opt/venv
COPY app /opt/lpstudy/app
COPY deploy/docker/lpstudy-claim-gpu /usr/local/bin/lpstudy-claim-gpu
COPY deploy/docker/lpstudy-with-secrets /usr/local/bin/lpstudy-with-secrets
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    LPSTUDY_APP_DIR=/opt/lpstudy/app \
    LPSTUDY_DATA=/opt/lpstudy/data/tinyshakespeare.txt \
    NVIDIA_DRIVER_CAPABILITIES=compute,utility \
    STREAMLIT_BROWSER_GATHER_USAGE_STATS=false
USER lpstudy
WORKDIR /home/lpstudy
# Fails the build if the installed command does not start. No ENTRYPOINT: a container's command
# (lpstudy ..., python ...) runs as given, in docker compose and Kubernetes alike.
RUN lpstudy --version && lpstudy --help >/dev/null
# dashboard, optuna-dashboard, storage-proxy, a worker's metrics
EXPOSE 8501 8080 13000 9108
CMD ["lpstudy", "--help"]

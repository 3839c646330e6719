# polyg over Streamable HTTP. The embedded FalkorDB keeps its data in /data; set
# POLYG_STORE=falkor://host:port to use a FalkorDB server instead (see docker-compose.yml).
# A non-loopback bind needs an API key: run with -e POLYG_API_KEY=... .
FROM python:3.12-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY polyg ./polyg
RUN pip install --no-cache-dir . && useradd --create-home polyg && mkdir /data && chown polyg /data
USER polyg
ENV POLYG_DATA_DIR=/data POLYG_HOST=0.0.0.0 POLYG_PORT=8765 POLYG_TRANSPORT=http
VOLUME /data
EXPOSE 8765
CMD ["polyg", "serve"]

# Attention Playground: the app on the offline default, for a classroom server.
#   docker build -t attention-playground . && docker run -p 8501:8501 attention-playground
FROM python:3.11-slim

ENV PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    HF_HUB_OFFLINE=1 \
    OMP_WAIT_POLICY=PASSIVE \
    MALLOC_MMAP_THRESHOLD_=131072

WORKDIR /app
# CPU-only torch from PyTorch's CPU index (the default index would pull CUDA builds).
RUN pip install --index-url https://download.pytorch.org/whl/cpu torch==2.13.0
COPY requirements.txt .
RUN pip install -r requirements.txt
COPY . .

EXPOSE 8501
HEALTHCHECK CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8501/_stcore/health')"
CMD ["python", "-m", "app", "--server.port=8501", "--server.address=0.0.0.0"]

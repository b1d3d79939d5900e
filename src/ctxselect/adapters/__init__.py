"""Framework adapters: ctxselect's budgeted selection as a LangChain or LlamaIndex retriever.

``ctxselect.adapters.langchain`` (extra ``ctxselect[langchain]``) and
``ctxselect.adapters.llamaindex`` (extra ``ctxselect[llamaindex]``) each define a
``CtxselectRetriever`` on that framework's own ``BaseRetriever``; ``pieces`` turns a
:class:`~ctxselect.types.Selection` into framework-neutral pieces both share. Like
``interfaces/``, adapters import only ``api/``, ``agent/`` and the values, and nothing
imports them: ``import ctxselect`` never loads a framework.
"""

"""Turn source documents into stored documents, chunks, vectors and a lexical index."""

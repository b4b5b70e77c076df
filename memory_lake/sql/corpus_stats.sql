-- BM25 corpus statistics: number of indexed items and their average length in tokens.
SELECT count(*) AS n_docs, coalesce(avg(doc_len), 0) AS avg_doc_len FROM docs

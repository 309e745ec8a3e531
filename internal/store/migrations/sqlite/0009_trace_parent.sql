-- The W3C traceparent of the span that fired the event (the API request
-- that made the change), when tracing was on and the span was sampled; NULL
-- otherwise. Each delivery attempt of the event, made by whichever process
-- claims it, continues that trace (internal/tracing).
ALTER TABLE events ADD COLUMN trace_parent TEXT;

-- A request whose API token this process has seen valid within the last
-- second creates its license without reading the token first (decision
-- 0110): its one statement checks the token instead, `CASE WHEN EXISTS
-- (the token, unexpired) THEN 0 WHEN herald_api_token_refused() THEN 0
-- END`, whose second condition is evaluated only when the first is false,
-- and then raises an error (SQLSTATE HT001) that ends the statement before
-- it commits anything. The request is then refused as any request with a
-- revoked or expired token is.
CREATE FUNCTION herald_api_token_refused() RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'the API token is unknown, revoked or expired' USING ERRCODE = 'HT001';
END $$;

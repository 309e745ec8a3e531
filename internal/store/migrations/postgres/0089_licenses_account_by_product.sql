-- A license's account is held by its product's key: licenses (account_id,
-- product_id) references products (account_id, id), whose account_id
-- references accounts, and product_id is never NULL. The licenses' own key
-- to accounts checked nothing more, and cost every license created a lock
-- on its account's row (FOR KEY SHARE: under concurrent creations a
-- MultiXact and two WAL records each), the row every call of the account
-- shares (decision 0107). Deleting an account still deletes its licenses,
-- through its products.
-- Found by what it references rather than by its name.
DO $$
DECLARE
  c name;
BEGIN
  FOR c IN SELECT conname FROM pg_constraint
           WHERE conrelid = 'licenses'::regclass AND contype = 'f' AND confrelid = 'accounts'::regclass LOOP
    EXECUTE format('ALTER TABLE licenses DROP CONSTRAINT %I', c);
  END LOOP;
END $$;

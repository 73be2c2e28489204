-- Every primary key includes tenant_id, as Citus requires of a table distributed by it; id leads, so lookups by id
-- alone still use the key. The partitioned layout's keys (id, tenant_id, event_created_at) already do: only plain
-- tables whose key is id alone change. Rebuilding a key holds its table for the build (about a second per million rows).
DO $$
DECLARE
  t text;
  old_key text;
BEGIN
  FOREACH t IN ARRAY ARRAY['deliveries', 'attempts', 'replay_jobs', 'expunge_jobs'] LOOP
    SELECT k.conname INTO old_key
    FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid
    WHERE c.oid = to_regclass(quote_ident(t)) AND c.relkind = 'r' AND k.contype = 'p' AND cardinality(k.conkey) = 1;
    IF old_key IS NOT NULL THEN
      EXECUTE format('ALTER TABLE %I DROP CONSTRAINT %I, ADD CONSTRAINT %I PRIMARY KEY (id, tenant_id)', t, old_key, t || '_id_tenant_id_pk');
    END IF;
  END LOOP;
END $$;

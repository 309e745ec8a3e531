-- Retention walks the events by id (decision 0099): ids are UUIDv7s made
-- from the wall clock when an event fires, so a bound on the id bounds the
-- triggering time. The index on the triggering time served that walk alone,
-- and cost every event fired an index entry.
DROP INDEX events_triggered;

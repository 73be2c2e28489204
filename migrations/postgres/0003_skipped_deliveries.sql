DROP INDEX "deliveries_tenant_time_idx";--> statement-breakpoint
DROP INDEX "deliveries_destination_time_idx";--> statement-breakpoint
DROP INDEX "deliveries_time_idx";--> statement-breakpoint
ALTER TABLE "deliveries" ADD COLUMN "skipped_at" timestamp (3) with time zone;--> statement-breakpoint
CREATE INDEX "deliveries_tenant_time_idx" ON "deliveries" USING btree ("tenant_id","event_time","event_id","destination_id") WHERE attempt_count > 0 or skipped_at is not null;--> statement-breakpoint
CREATE INDEX "deliveries_destination_time_idx" ON "deliveries" USING btree ("tenant_id","destination_id","event_time","event_id") WHERE attempt_count > 0 or skipped_at is not null;--> statement-breakpoint
CREATE INDEX "deliveries_time_idx" ON "deliveries" USING btree ("event_time","event_id","destination_id") WHERE attempt_count > 0 or skipped_at is not null;
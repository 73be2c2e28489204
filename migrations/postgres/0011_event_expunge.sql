CREATE TABLE "expunge_jobs" (
	"id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"status" text NOT NULL,
	"time_from" timestamp (3) with time zone NOT NULL,
	"time_to" timestamp (3) with time zone NOT NULL,
	"topic" text,
	"expunged" integer NOT NULL,
	"cursor_time" timestamp (3) with time zone,
	"cursor_event" text,
	"lease_owner" text,
	"lease_until" timestamp (3) with time zone,
	"created_at" timestamp (3) with time zone NOT NULL,
	"updated_at" timestamp (3) with time zone NOT NULL,
	"finished_at" timestamp (3) with time zone
);
--> statement-breakpoint
ALTER TABLE "events" ADD COLUMN "expunged_at" timestamp (3) with time zone;--> statement-breakpoint
CREATE INDEX "expunge_jobs_open_idx" ON "expunge_jobs" USING btree ("created_at") WHERE status <> 'done';
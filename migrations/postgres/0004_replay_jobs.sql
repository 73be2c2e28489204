CREATE TABLE "replay_jobs" (
	"id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"destination_id" text NOT NULL,
	"status" text NOT NULL,
	"since" timestamp (3) with time zone NOT NULL,
	"until" timestamp (3) with time zone NOT NULL,
	"select_status" text NOT NULL,
	"topics" jsonb,
	"matched" integer NOT NULL,
	"done" integer NOT NULL,
	"failed" integer NOT NULL,
	"cursor_time" timestamp (3) with time zone,
	"cursor_event" text,
	"batch_time" timestamp (3) with time zone,
	"batch_event" text,
	"batch_started_at" timestamp (3) with time zone,
	"lease_owner" text,
	"lease_until" timestamp (3) with time zone,
	"created_at" timestamp (3) with time zone NOT NULL,
	"updated_at" timestamp (3) with time zone NOT NULL,
	"finished_at" timestamp (3) with time zone
);
--> statement-breakpoint
ALTER TABLE "deliveries" ADD COLUMN "replay_job" text;--> statement-breakpoint
CREATE INDEX "replay_jobs_running_idx" ON "replay_jobs" USING btree ("created_at") WHERE status = 'running';--> statement-breakpoint
CREATE INDEX "replay_jobs_destination_idx" ON "replay_jobs" USING btree ("tenant_id","destination_id","created_at");--> statement-breakpoint
CREATE INDEX "deliveries_replay_idx" ON "deliveries" USING btree ("replay_job") WHERE replay_job is not null;
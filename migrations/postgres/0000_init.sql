CREATE TABLE "attempts" (
	"id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"event_id" text NOT NULL,
	"destination_id" text NOT NULL,
	"delivery_id" text NOT NULL,
	"attempt_number" integer NOT NULL,
	"manual" boolean NOT NULL,
	"status" text NOT NULL,
	"response_status_code" integer,
	"response_body" text,
	"response_headers" jsonb,
	"error" text,
	"error_kind" text,
	"duration_ms" integer,
	"delivered_at" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "deliveries" (
	"id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"event_id" text NOT NULL,
	"destination_id" text NOT NULL,
	"topic" text NOT NULL,
	"event_time" timestamp (3) with time zone NOT NULL,
	"status" text NOT NULL,
	"attempt_count" integer NOT NULL,
	"manual" boolean NOT NULL,
	"next_attempt_at" timestamp (3) with time zone,
	"lease_owner" text,
	"lease_until" timestamp (3) with time zone,
	"last_attempt_at" timestamp (3) with time zone,
	"successful_at" timestamp (3) with time zone
);
--> statement-breakpoint
CREATE TABLE "destinations" (
	"tenant_id" text NOT NULL,
	"id" text NOT NULL,
	"type" text NOT NULL,
	"topics" jsonb NOT NULL,
	"filter" jsonb,
	"config" jsonb NOT NULL,
	"credentials" text NOT NULL,
	"delivery_metadata" jsonb,
	"metadata" jsonb,
	"disabled_at" timestamp (3) with time zone,
	"created_at" timestamp (3) with time zone NOT NULL,
	"updated_at" timestamp (3) with time zone NOT NULL,
	"consecutive_failures" integer DEFAULT 0 NOT NULL,
	CONSTRAINT "destinations_tenant_id_id_pk" PRIMARY KEY("tenant_id","id")
);
--> statement-breakpoint
CREATE TABLE "events" (
	"tenant_id" text NOT NULL,
	"id" text NOT NULL,
	"topic" text NOT NULL,
	"time" timestamp (3) with time zone NOT NULL,
	"data" jsonb NOT NULL,
	"metadata" jsonb NOT NULL,
	"eligible_for_retry" boolean NOT NULL,
	"created_at" timestamp (3) with time zone NOT NULL,
	CONSTRAINT "events_tenant_id_id_pk" PRIMARY KEY("tenant_id","id")
);
--> statement-breakpoint
CREATE TABLE "tenants" (
	"id" text PRIMARY KEY NOT NULL,
	"metadata" jsonb NOT NULL,
	"created_at" timestamp (3) with time zone NOT NULL,
	"updated_at" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
CREATE INDEX "attempts_event_idx" ON "attempts" USING btree ("tenant_id","event_id","delivered_at");--> statement-breakpoint
CREATE UNIQUE INDEX "deliveries_pair_idx" ON "deliveries" USING btree ("tenant_id","event_id","destination_id");--> statement-breakpoint
CREATE INDEX "deliveries_due_idx" ON "deliveries" USING btree ("next_attempt_at") WHERE status = 'pending';--> statement-breakpoint
CREATE INDEX "deliveries_tenant_time_idx" ON "deliveries" USING btree ("tenant_id","event_time","event_id","destination_id") WHERE attempt_count > 0;--> statement-breakpoint
CREATE INDEX "deliveries_destination_time_idx" ON "deliveries" USING btree ("tenant_id","destination_id","event_time","event_id") WHERE attempt_count > 0;--> statement-breakpoint
CREATE INDEX "deliveries_time_idx" ON "deliveries" USING btree ("event_time","event_id","destination_id") WHERE attempt_count > 0;--> statement-breakpoint
CREATE INDEX "destinations_tenant_created_idx" ON "destinations" USING btree ("tenant_id","created_at","id");--> statement-breakpoint
CREATE INDEX "tenants_created_idx" ON "tenants" USING btree ("created_at","id");